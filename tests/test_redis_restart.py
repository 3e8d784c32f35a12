"""Redis goes away and comes back: the service says so, then carries on with nothing lost."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .replies import id_of, interaction, usage_of
from .support import Stack, new_key, running_stack, sdk
from .waiting import until


@pytest.fixture(scope="module")
def restartable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(Path(tmp_path_factory.mktemp("restart")), workers=1) as stack:
        yield stack


def test_service_survives_a_redis_restart(restartable: Stack) -> None:
    url = restartable.servers[0][1]
    key = new_key()
    client = sdk(url, key)
    before = id_of(interaction(client.interactions.create(model="echo", input="kept across the restart")))

    restartable.redis.stop()  # SIGTERM: Redis writes its AOF and exits
    assert httpx.get(f"{url}/readyz", timeout=5).status_code == 503
    assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
    restartable.start_redis()
    until(lambda: httpx.get(f"{url}/readyz", timeout=5).status_code == 200, timeout=15)

    assert client.interactions.get(before).output_text == "kept across the restart"
    after = interaction(
        client.interactions.create(model="echo", input="and after", previous_interaction_id=before)
    )
    assert usage_of(after).total_input_tokens == 4 + 4 + 2
    # the worker came back too: background runs complete, and cancels still reach them
    job = id_of(
        interaction(client.interactions.create(model="echo-slow", input="one two three", background=True))
    )
    until(lambda: client.interactions.get(job).status == "completed", timeout=20)
    slow = id_of(
        interaction(
            client.interactions.create(model="echo-slow", input=" ".join(["w"] * 200), background=True)
        )
    )
    until(lambda: client.interactions.get(slow).status == "in_progress", timeout=20)
    time.sleep(0.3)
    started = time.monotonic()
    assert client.interactions.cancel(slow).status == "cancelled"
    assert time.monotonic() - started < 1.5  # the run saved its output itself (no fallback wait)
