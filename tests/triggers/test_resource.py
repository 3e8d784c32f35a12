"""The Triggers resource (issue 29), driven by the official SDK's `client.triggers.*` against the shared
server: every field, updates, paging, errors naming their field, limits, the Vertex form, tenants apart."""

from __future__ import annotations

import secrets
from typing import Any, cast

import httpx
import pytest
import redis.asyncio as aioredis
from google import genai
from google.genai._gaos.lib.compat_errors import APIStatusError
from google.genai._gaos.types.interactions import CreateAgentInteractionParam

from server.errors import InvalidArgument
from server.sections import TriggerSettings
from server.store import keys
from server.triggers import headers, rules
from server.webhooks.secrets import SealError

from ..support import new_key, sdk

#: the SDK warns once per process that its Triggers are experimental
pytestmark = pytest.mark.filterwarnings("ignore:Triggers usage is experimental:UserWarning")

#: once a year: these tests look at the resource, not at its fires
YEARLY = "0 9 1 1 *"


def param(body: dict[str, Any]) -> CreateAgentInteractionParam:
    """A create's body as the SDK types it (its `agent` names Google's agents; any name is sent as given)."""
    return cast(CreateAgentInteractionParam, body)


HELLO = param({"agent": "echo", "input": "good morning"})


def refused(call: Any, status: int, field: str | None = None) -> dict[str, Any]:
    """The error body of a call that must fail with `status`, naming `field` if given."""
    with pytest.raises(APIStatusError) as raised:
        call()
    assert raised.value.status_code == status, raised.value
    error: dict[str, Any] = raised.value.response.json()["error"]
    if field is not None:
        assert f"`{field}`" in error["message"], error
    return error


def test_every_field(client: genai.Client) -> None:
    interaction: dict[str, Any] = {
        "agent": "echo",
        "input": "what changed overnight?",
        "system_instruction": "Be terse.",
        "labels": {"team": "ops"},
    }
    made = client.triggers.create(
        interaction=param(interaction),
        schedule=YEARLY,
        time_zone="America/New_York",
        display_name="morning digest",
        execution_timeout_seconds=120,
        max_consecutive_failures=3,
    )
    assert made.id.startswith("tr_") and rules.is_trigger_id(made.id)
    assert (made.schedule, made.time_zone, made.display_name) == (
        YEARLY,
        "America/New_York",
        "morning digest",
    )
    assert (made.execution_timeout_seconds, made.max_consecutive_failures) == (120, 3)
    assert (made.status, made.consecutive_failure_count) == ("active", 0)
    assert made.interaction.model_dump(exclude_none=True) == interaction
    assert made.create_time is not None and made.update_time == made.create_time
    # 09:00 in New York on 1 January is 14:00 UTC
    assert made.next_run_time is not None and (made.next_run_time.month, made.next_run_time.day) == (1, 1)
    assert made.next_run_time.hour == 14 and made.next_run_time.utcoffset() is not None
    assert made.last_run_time is None and made.previous_interaction_id is None
    got = client.triggers.get(made.id)
    assert got.model_dump() == made.model_dump()
    assert [each.id for each in client.triggers.list().triggers or []] == [made.id]
    assert client.triggers.list_executions(made.id).trigger_executions in (None, [])


def test_defaults(client: genai.Client) -> None:
    made = client.triggers.create(interaction=HELLO, schedule=YEARLY, time_zone="UTC")
    # [triggers] execution_timeout_seconds; no failure limit unless one is set
    assert (made.execution_timeout_seconds, made.max_consecutive_failures, made.display_name) == (
        600,
        None,
        None,
    )


def test_pause_and_resume(client: genai.Client) -> None:
    made = client.triggers.create(interaction=HELLO, schedule=YEARLY, time_zone="Europe/Paris")
    paused = client.triggers.update(made.id, status="paused")
    assert paused.status == "paused" and paused.last_pause_time is not None
    # a paused trigger runs at no time
    assert paused.next_run_time is None
    assert paused.update_time is not None and made.update_time is not None
    assert paused.update_time >= made.update_time
    resumed = client.triggers.update(made.id, status="active")
    assert resumed.status == "active" and resumed.last_resume_time is not None
    assert resumed.next_run_time == made.next_run_time
    assert resumed.last_pause_time == paused.last_pause_time
    renamed = client.triggers.update(made.id, display_name="renamed")
    assert (renamed.display_name, renamed.status) == ("renamed", "active")
    assert [each.id for each in client.triggers.list(filter_="status = active").triggers or []] == [made.id]
    assert client.triggers.list(filter_="status = paused").triggers in (None, [])


def test_update_mask(http: httpx.Client) -> None:
    made = http.post(
        "/v1beta/triggers",
        json={"interaction": HELLO, "schedule": YEARLY, "time_zone": "UTC", "display_name": "a"},
    ).json()
    # the mask names what changes: a field it leaves out is kept though the body has it
    changed = http.patch(
        f"/v1beta/triggers/{made['id']}",
        params={"update_mask": "display_name"},
        json={"display_name": "b", "status": "paused"},
    )
    assert changed.status_code == 200 and (changed.json()["display_name"], changed.json()["status"]) == (
        "b",
        "active",
    )
    # a mask naming a field it leaves out of the body clears it
    cleared = http.patch(f"/v1beta/triggers/{made['id']}", params={"update_mask": "display_name"}, json={})
    assert "display_name" not in cleared.json()
    bad = http.patch(f"/v1beta/triggers/{made['id']}", params={"update_mask": "schedule"}, json={})
    assert bad.status_code == 400 and "`update_mask`" in bad.json()["error"]["message"]


def test_paging(client: genai.Client) -> None:
    ids = [client.triggers.create(interaction=HELLO, schedule=YEARLY, time_zone="UTC").id for _ in range(5)]
    first = client.triggers.list(page_size=2)
    assert [each.id for each in first.triggers or []] == ids[:2] and first.next_page_token
    second = client.triggers.list(page_size=2, page_token=first.next_page_token)
    assert [each.id for each in second.triggers or []] == ids[2:4]
    third = client.triggers.list(page_size=2, page_token=second.next_page_token)
    assert [each.id for each in third.triggers or []] == ids[4:] and not third.next_page_token


def test_delete(client: genai.Client) -> None:
    made = client.triggers.create(interaction=HELLO, schedule=YEARLY, time_zone="UTC")
    client.triggers.delete(made.id)
    refused(lambda: client.triggers.get(made.id), 404)
    refused(lambda: client.triggers.delete(made.id), 404)
    refused(lambda: client.triggers.run(made.id), 404)
    refused(lambda: client.triggers.list_executions(made.id), 404)
    assert client.triggers.list().triggers in (None, [])


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"schedule": "61 * * * *"}, "schedule"),
        ({"schedule": "every morning"}, "schedule"),
        ({"schedule": "0 0 30 2 *"}, "schedule"),
        ({"time_zone": "Mars/Olympus_Mons"}, "time_zone"),
        ({"time_zone": "EST5EDT/../../x"}, "time_zone"),
        ({"interaction": {"agent": "echo"}}, "interaction.input"),
        ({"interaction": {"agent": "no-such-agent", "input": "hi"}}, "interaction.agent"),
        ({"interaction": {"model": "echo", "agent": "echo", "input": "hi"}}, "interaction.agent"),
        ({"interaction": {"agent": "echo", "input": "hi", "surprise": 1}}, "interaction.surprise"),
        ({"interaction": {"agent": "echo", "input": "hi", "store": False}}, "interaction.store"),
        (
            {"interaction": {"agent": "echo", "input": [{"type": "user_input", "content": 3}]}},
            "interaction.input[0].content",
        ),
        ({"interaction": "hello"}, "interaction"),
        ({"execution_timeout_seconds": 86401}, "execution_timeout_seconds"),
        ({"execution_timeout_seconds": -1}, "execution_timeout_seconds"),
        ({"max_consecutive_failures": -1}, "max_consecutive_failures"),
        ({"environment_id": "env-1"}, "environment_id"),
        ({"display_name": "x" * 513}, "display_name"),
    ],
)
def test_refused_naming_the_field(http: httpx.Client, changes: dict[str, Any], field: str) -> None:
    body = {"interaction": HELLO, "schedule": YEARLY, "time_zone": "UTC", **changes}
    answer = http.post("/v1beta/triggers", json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT" and f"`{field}`" in error["message"], error
    assert http.get("/v1beta/triggers").json().get("triggers", []) == []


def test_status_error_is_the_servers(client: genai.Client) -> None:
    made = client.triggers.create(interaction=HELLO, schedule=YEARLY, time_zone="UTC")
    refused(lambda: client.triggers.update(made.id, status="error"), 400, "status")


def test_the_shortest_interval() -> None:
    settings = TriggerSettings(min_interval_seconds=60)
    rules.schedule("* * * * *", "UTC", settings, 0)
    with pytest.raises(InvalidArgument) as raised:
        rules.schedule("*/30 * * * * *", "UTC", settings, 0)
    assert raised.value.field == "schedule" and "60 s" in raised.value.message
    # a gap that only some of its times have counts too (minutes 0 and 1 of each hour)
    with pytest.raises(InvalidArgument):
        rules.schedule("0,30 0,1 * * * *", "UTC", settings, 0)


def test_the_number_of_triggers_is_limited(http: httpx.Client) -> None:
    body = {"interaction": HELLO, "schedule": YEARLY, "time_zone": "UTC"}
    for _ in range(100):  # [triggers] max_triggers
        assert http.post("/v1beta/triggers", json=body).status_code == 200
    over = http.post("/v1beta/triggers", json=body)
    assert over.status_code == 429 and over.json()["error"]["status"] == "RESOURCE_EXHAUSTED"


def test_the_vertex_form(base_url: str, api_key: str) -> None:
    base = "/v1beta1/projects/p/locations/us-central1/triggers"
    with httpx.Client(base_url=base_url, headers={"x-goog-api-key": api_key}, timeout=30) as http:
        made = http.post(base, json={"interaction": HELLO, "schedule": YEARLY, "time_zone": "UTC"})
        assert made.status_code == 200, made.text
        trigger_id = made.json()["id"]
        assert http.get(f"{base}/{trigger_id}").json()["id"] == trigger_id
        assert http.get(f"/v1beta/triggers/{trigger_id}").status_code == 200
        assert http.get(f"{base}/{trigger_id}/executions").status_code == 200
        assert http.delete(f"{base}/{trigger_id}").json() == {}


def test_tenants_apart(base_url: str, client: genai.Client) -> None:
    made = client.triggers.create(interaction=HELLO, schedule=YEARLY, time_zone="UTC")
    other = sdk(base_url, new_key())
    refused(lambda: other.triggers.get(made.id), 404)
    refused(lambda: other.triggers.update(made.id, status="paused"), 404)
    refused(lambda: other.triggers.run(made.id), 404)
    refused(lambda: other.triggers.list_executions(made.id), 404)
    refused(lambda: other.triggers.delete(made.id), 404)
    assert other.triggers.list().triggers in (None, [])
    assert client.triggers.get(made.id).status == "active"


def test_a_malformed_id_is_not_found(client: genai.Client) -> None:
    refused(lambda: client.triggers.get("not-a-trigger"), 404)


async def test_mcp_header_values_are_sealed_and_hidden(
    base_url: str, api_key: str, redis: aioredis.Redis, tenant: str
) -> None:
    http = httpx.AsyncClient(base_url=base_url, headers={"x-goog-api-key": api_key}, timeout=30)
    server = {"type": "mcp_server", "name": "files", "url": "https://93.184.216.34/mcp"}
    tool = {**server, "headers": {"Authorization": "Bearer s3cret-value"}}
    body = {"interaction": {**HELLO, "tools": [tool]}, "schedule": YEARLY, "time_zone": "UTC"}
    async with http:
        made = await http.post("/v1beta/triggers", json=body)
        assert made.status_code == 200, made.text
        got = await http.get(f"/v1beta/triggers/{made.json()['id']}")
    shown = made.json()["interaction"]["tools"][0]
    assert shown == {**server, "headers": {"Authorization": headers.HIDDEN}}
    assert got.json()["interaction"]["tools"][0] == shown
    stored = await cast(Any, redis).hget(keys.trigger(tenant, made.json()["id"]), keys.TriggerField.CONFIG)
    assert b"s3cret-value" not in stored and b"Authorization" in stored


def test_header_values_open_with_their_trigger_only() -> None:
    key = secrets.token_bytes(32)
    template = {"tools": [{"type": "mcp_server", "headers": {"X-Key": "v"}}, {"type": "function"}]}
    sealed = headers.sealed(template, "t1", "tr_a", key)
    assert sealed["tools"][0]["headers"]["X-Key"] != "v" and sealed["tools"][1] == {"type": "function"}
    assert headers.opened(sealed, "t1", "tr_a", [key]) == template
    with pytest.raises(SealError):
        headers.opened(sealed, "t1", "tr_b", [key])
