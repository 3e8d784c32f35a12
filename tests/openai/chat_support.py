"""What the Chat Completions tests share: one server per module (the app in this process, tests/inproc.py,
its worker embedded) with the built-in echo models and `gpt-*` routed to a fake OpenAI upstream
(tests/fakes/openai.py) on a loop of its own, and the official openai SDK pointed at it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from openai import OpenAI

from tests.fakes.http import FakeServer
from tests.fakes.loop import fake_in_thread
from tests.inproc import ThreadedApp, environment, threaded

KEY_VARIABLE = "IX_CHAT_TEST_OPENAI_KEY"
UPSTREAM_KEY = "openai-secret-chat"


@dataclass
class ChatServer:
    app: ThreadedApp
    #: the fake OpenAI server `gpt-*` models are routed to
    upstream: FakeServer

    @property
    def url(self) -> str:
        return self.app.url

    def reset(self) -> None:
        self.upstream.scripts.clear()
        self.upstream.requests.clear()


def models_toml(upstream: FakeServer) -> str:
    return "\n".join(
        [
            "[[models]]",
            'match = "gpt-*"',
            'backend = "openai"',
            f'base_url = "{upstream.base_url}/v1"',
            f'api_key_env = "{KEY_VARIABLE}"',
            "",
        ]
    )


@contextlib.contextmanager
def chat_server(workdir: Path) -> Iterator[ChatServer]:
    with (
        fake_in_thread(FakeServer()) as upstream,
        environment({KEY_VARIABLE: UPSTREAM_KEY}),
        threaded(workdir, models=models_toml(upstream)) as app,
    ):
        yield ChatServer(app=app, upstream=upstream)


@contextlib.contextmanager
def openai_client(url: str, api_key: str, *, max_retries: int = 0, base: str = "/v1") -> Iterator[OpenAI]:
    """The official SDK on `url` + `base`, without retries unless asked: a retried 5xx must not look like a
    success."""
    client = OpenAI(base_url=url + base, api_key=api_key, max_retries=max_retries, timeout=30)
    try:
        yield client
    finally:
        client.close()
