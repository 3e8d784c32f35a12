"""Limits on each of the ways the README starts the service (tests/support.py: TOPOLOGIES): `make run`'s
stack, and a web process with worker processes, where a background run's token budget is found by the
worker that runs it, and the limits file is read by every process."""

from __future__ import annotations

import time
from pathlib import Path

from google import genai

from ..replies import id_of, interaction, output_text_of, usage_of
from ..support import new_key, sdk, tenant_of
from .operator import set_limits
from .test_limits import WORDS, refused

EVERY_TOPOLOGY = True


def _ended(client: genai.Client, interaction_id: str, seconds: float = 20) -> str:
    deadline = time.monotonic() + seconds
    while (status := client.interactions.get(id=interaction_id).status) in ("in_progress", "queued"):
        assert time.monotonic() < deadline, f"{interaction_id} still {status}"
        time.sleep(0.1)
    return str(status)


def test_a_background_run_stops_at_its_budget_in_the_worker_and_frees_its_place(
    base_url: str, server_config: Path
) -> None:
    key = new_key()
    set_limits(server_config, tenant_of(key), tokens_per_day=38, background_runs=1)
    client = sdk(base_url, key)
    run = interaction(client.interactions.create(model="echo-slow", input=WORDS, background=True))
    # its place is taken while it runs
    error = refused(lambda: client.interactions.create(model="echo", input="x", background=True))
    assert "background_runs" in error["message"]
    assert _ended(client, id_of(run)) == "budget_exceeded"
    ended = client.interactions.get(id=id_of(run))
    assert output_text_of(ended).split() == WORDS.split()[:8]
    assert usage_of(ended).total_tokens == 38
    # ended, it holds no place; the day's tokens, though, are used up
    error = refused(lambda: client.interactions.create(model="echo", input="x", background=True))
    assert "tokens_per_day" in error["message"]
