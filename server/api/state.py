"""What the handlers share, built once per process in the app's lifespan."""

from __future__ import annotations

import msgspec
from redis.asyncio import Redis

from ..events.log import EventLog
from ..runner.service import InteractionService
from ..settings import Settings
from .auth import Authenticator


class AppState(msgspec.Struct, kw_only=True):
    settings: Settings
    redis: Redis
    auth: Authenticator
    service: InteractionService
    events: EventLog
