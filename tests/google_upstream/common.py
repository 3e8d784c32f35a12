"""What the tests of the interactions backend share: the keys and routes of the front, and readers."""

from __future__ import annotations

import json
from typing import Any, Final

import httpx
import redis
from google import genai

from server.store import keys

from ..inproc import ThreadedApp
from ..replies import interaction, steps_of
from ..support import tenant_of
from ..waiting import until

GOOGLE_KEY: Final = "google-secret-e2e"
#: the key the front calls the back with: the back's tenant of every remote run
BACK_KEY: Final = "back-of-front-key"
SECRETS: Final = {"IX_E2E_GOOGLE_KEY": GOOGLE_KEY, "IX_E2E_BACK_KEY": BACK_KEY}
#: the back's agent the front's `deep-research-*` agents are: echo-slow, a word every 50 ms
BACK_AGENT: Final = "slow-researcher"
VERTEX_PROJECT: Final = "fake-project"
WEATHER_TOOL: Final = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def models_toml(google: str, back: str) -> str:
    def route(match: str, base_url: str, key: str, **extra: Any) -> str:
        lines = ["[[models]]", f'match = "{match}"', 'backend = "interactions"', f'base_url = "{base_url}"']
        lines.append(f'api_key_env = "{key}"')
        lines += [f"{name} = {json.dumps(value)}" for name, value in extra.items()]
        return "\n".join(lines) + "\n"

    return "\n".join(
        [
            route("remote-echo", back, "IX_E2E_BACK_KEY", upstream_model="echo"),
            route("remote-slow", back, "IX_E2E_BACK_KEY", upstream_model="echo-slow"),
            route("deep-research-*", back, "IX_E2E_BACK_KEY", upstream_model=BACK_AGENT),
            route("gemini-*", google, "IX_E2E_GOOGLE_KEY"),
            # Vertex's form: the project and location in the base URL, the key sent as a bearer token
            route(
                "vertex-*",
                f"{google}/v1beta1/projects/{VERTEX_PROJECT}/locations/us-central1",
                "IX_E2E_GOOGLE_KEY",
            ),
        ]
    )


def create(ai: genai.Client, **fields: Any) -> Any:
    return interaction(ai.interactions.create(**fields))


def listed(url: str, api_key: str) -> list[dict[str, Any]]:
    """The interactions a tenant has stored on the server at `url` (our list extension)."""
    reply = httpx.get(f"{url}/v1beta/interactions", headers={"x-goog-api-key": api_key}, timeout=10)
    assert reply.status_code == 200, reply.text
    found: list[dict[str, Any]] = reply.json().get("interactions", [])
    return found


def step_types(reply: Any) -> list[str]:
    return [step.type for step in steps_of(reply)]


def remote_id_of(front: ThreadedApp, api_key: str, interaction_id: str) -> str | None:
    """The remote run the front's record names (`rid`, store/keys.py), as Redis holds it."""
    with redis.Redis.from_url(front.redis_url) as client:
        value = client.hget(keys.interaction(tenant_of(api_key), interaction_id), keys.Field.REMOTE)
    return value.decode() if isinstance(value, bytes) else None


def finished(ai: genai.Client, interaction_id: str, timeout: float = 20) -> Any:
    until(
        lambda: ai.interactions.get(interaction_id).status not in ("queued", "in_progress"), timeout=timeout
    )
    return ai.interactions.get(interaction_id)
