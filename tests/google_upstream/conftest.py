"""The two upstreams of the interactions backend's tests, and the front that routes to them.

A fake of Google's API (tests/fakes/google_remote.py), for what only Google makes: scripted answers
(tests/fakes/google_interactions.py: built-in tool steps, signatures, its errors, a stream cut short) and,
with no script queued, interactions it keeps and runs on its own clock (background runs followed, resumed,
polled, cancelled, deleted); the front routes `gemini-*` and `vertex-*` to it. And a second instance of
this server (the back), so that the real protocol implementation is on both sides: the front routes
`remote-*` models and `deep-research-*` agents to it. Both servers are apps in this process
(tests/inproc.py), each with its own Redis.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from google import genai

from ..fakes.google_remote import GoogleFake
from ..fakes.loop import fake_in_thread
from ..inproc import ThreadedApp, environment, threaded
from ..support import sdk
from .common import BACK_AGENT, BACK_KEY, SECRETS, models_toml


@pytest.fixture(scope="package")
def google() -> Iterator[GoogleFake]:
    with fake_in_thread(GoogleFake()) as fake:
        yield fake


@pytest.fixture(scope="package")
def back(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedApp]:
    with threaded(Path(tmp_path_factory.mktemp("google-back"))) as app:
        agent = {"id": BACK_AGENT, "base_agent": "echo-slow"}
        made = httpx.post(f"{app.url}/v1beta/agents", json=agent, headers={"x-goog-api-key": BACK_KEY})
        assert made.status_code == 200, made.text
        yield app


@pytest.fixture(scope="package")
def front(
    google: GoogleFake, back: ThreadedApp, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ThreadedApp]:
    models = models_toml(google.base_url, back.url)
    with environment(SECRETS), threaded(Path(tmp_path_factory.mktemp("google-front")), models=models) as app:
        yield app


@pytest.fixture(autouse=True)
def fresh(google: GoogleFake) -> Iterator[None]:
    google.reset()
    yield
    google.reset()


@pytest.fixture
def ai(front: ThreadedApp, api_key: str) -> genai.Client:
    return sdk(front.url, api_key)
