"""Scenario 12 (issue 16), the list: what a page of `GET /v1beta/interactions` costs in a small tenant and
in a tenant twenty times larger, and what the search indexes add to a create.

Two tenants (two API keys: in the server's open mode a key's digest is its tenant) are seeded through the
API with stored foreground `echo` creates, many at once: A with `list_small` interactions, B with
`list_large`. Each carries two labels, `user` (one of `USERS` values, round robin) and `bench`; `RARE` of
each tenant's also carry `rare=yes`. Then each query below is timed in both tenants, the tenants taking
turns (`ROUNDS` rounds of A then B, `list_requests` / ROUNDS requests each, half as many for the budget's
query, over `CONNECTIONS` connections), so that the machine's load falls on both alike: the figure is B's
p50 (and p99) over A's, which a cost that does not grow with the tenant's size keeps near 1. Beside each:
the Redis commands per request (INFO commandstats over the requests: the search script's own commands
included), and the server's and Redis's CPU per request (/proc).

The rare label is read from its own index (5 ids), as every label filter is: it does not test the budget.
The `budget` query does: a status filter no index narrows, which no interaction matches.

`USERS` is 40 rather than 100 so that a user's index holds more than a page (20) in the small tenant too:
both tenants then answer full pages, and the ratio compares like with like.

Then the create's side: `CREATE_SAMPLES` creates one after the other in a third tenant without labels, then
as many with two labels, each block between a CONFIG RESETSTAT and an INFO commandstats: Redis commands
per create (each tag is an index the script adds to, keeps alive and samples for dead ids).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any
from urllib.parse import urlencode

from ..client import Connection
from ..procs import cpu_seconds
from ..redis_watch import command_calls
from ..stats import distribution, ratio
from .common import CREATE, Bench, creates, json_object, payload

TENANTS = {"small": "bench-list-small", "large": "bench-list-large"}
CREATE_TENANT = "bench-list-creates"
USERS = 40
RARE = 5
#: connections seeding at once; connections listing at once
SEED_CONNECTIONS = 32
CONNECTIONS = 4
ROUNDS = 3
CREATE_SAMPLES = 200
#: each query's parameters. `budget`: a status no interaction has, which no index narrows, so a page
#: reads the search's budget of ids (server/store/search.py PAGE_BUDGET) and answers empty
QUERIES: dict[str, dict[str, str]] = {
    "first_page": {"page_size": "20"},
    "label": {"page_size": "20", "labels.user": "u07"},
    "rare_label": {"page_size": "20", "labels.rare": "yes"},
    "status": {"page_size": "20", "status": "completed"},
    "budget": {"page_size": "20", "status": "failed"},
}


def _headers(key: str) -> dict[str, str]:
    return {"x-goog-api-key": key, "content-type": "application/json"}


def _labels(index: int, count: int) -> dict[str, str]:
    """Interaction `index` of `count`: its user in turn, and the rare label on RARE of them, spread out."""
    labels = {"user": f"u{index % USERS:02d}", "bench": "list"}
    if index % (count // RARE) == 0 and index // (count // RARE) < RARE:
        labels["rare"] = "yes"
    return labels


async def _seed(b: Bench, key: str, count: int) -> int:
    """`count` stored echo creates in `key`'s tenant over SEED_CONNECTIONS connections; the failures."""
    bodies = (
        payload(model="echo", input=f"note {index}", labels=_labels(index, count)) for index in range(count)
    )
    return count - await creates(b.server.url, key, bodies, SEED_CONNECTIONS)


class Sample:
    """One query in one tenant, over the rounds: latencies, non-200s, Redis commands, CPU."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.errors = 0
        self.items: list[int] = []
        self.commands: Counter[str] = Counter()
        self.server_cpu = 0.0
        self.redis_cpu = 0.0

    def figures(self) -> dict[str, Any]:
        n = len(self.seconds)
        return {
            **distribution(self.seconds),
            "errors": self.errors,
            "items_per_page": round(sum(self.items) / len(self.items), 1) if self.items else None,
            "redis_commands_per_request": round(sum(self.commands.values()) / n, 1) if n else None,
            "redis_commands": dict(self.commands.most_common(8)),
            "server_cpu_ms_per_request": round(self.server_cpu * 1000 / n, 3) if n else None,
            "redis_cpu_ms_per_request": round(self.redis_cpu * 1000 / n, 3) if n else None,
        }


async def _timed(b: Bench, key: str, path: str, count: int, sample: Sample | None) -> None:
    """`count` GETs of `path` over CONNECTIONS connections, noted in `sample` (None: a warm-up)."""
    left = iter(range(count))

    async def one_connection() -> None:
        async with Connection(b.server.url, _headers(key)) as conn:
            for _ in left:
                began = time.perf_counter()
                response = await conn.request("GET", path)
                took = time.perf_counter() - began
                if sample is None:
                    continue
                sample.seconds.append(took)
                if response.status != 200:
                    sample.errors += 1
                else:
                    sample.items.append(len(json_object(response.body)["interactions"]))

    await asyncio.gather(*(one_connection() for _ in range(CONNECTIONS)))


async def _measured(b: Bench, key: str, path: str, count: int, sample: Sample) -> None:
    """One turn of a query in a tenant, its Redis commands (commandstats) and CPU (/proc) counted."""
    server, redis = b.server.pids(), b.stack.redis_pids()
    await b.redis.config_resetstat()
    cpu = cpu_seconds(server), cpu_seconds(redis)
    await _timed(b, key, path, count, sample)
    sample.server_cpu += cpu_seconds(server) - cpu[0]
    sample.redis_cpu += cpu_seconds(redis) - cpu[1]
    sample.commands += await command_calls(b.redis)


async def _query(b: Bench, name: str) -> dict[str, Any]:
    """One query in both tenants, taking turns; B's figures over A's."""
    path = CREATE + "?" + urlencode(QUERIES[name])
    # the budget's page costs ten times another's: half as many keep the scenario within the run's budget
    each = max(1, b.plan.list_requests // ROUNDS // (2 if name == "budget" else 1))
    samples = {name: Sample() for name in TENANTS}
    for key in TENANTS.values():  # warm up: this query's path through the server and the script
        await _timed(b, key, path, 20, None)
    for _ in range(ROUNDS):
        for name, key in TENANTS.items():
            await _measured(b, key, path, each, samples[name])
    small, large = samples["small"].figures(), samples["large"].figures()
    return {
        "path": path,
        "small": small,
        "large": large,
        "p50_large_vs_small": ratio(large["p50_ms"], small["p50_ms"]),
        "p99_large_vs_small": ratio(large["p99_ms"], small["p99_ms"]),
        "commands_large_vs_small": ratio(
            large["redis_commands_per_request"], small["redis_commands_per_request"]
        ),
    }


async def _create_cost(b: Bench, labelled: bool) -> dict[str, Any]:
    """CREATE_SAMPLES creates one after the other (with two labels, or none): Redis commands per create."""
    count = max(1, CREATE_SAMPLES // 4) if b.plan.quick else CREATE_SAMPLES
    seconds: list[float] = []
    async with Connection(b.server.url, _headers(CREATE_TENANT)) as conn:
        await b.redis.config_resetstat()
        for index in range(count):
            fields: dict[str, Any] = {"model": "echo", "input": f"note {index}"}
            if labelled:
                fields["labels"] = {"user": f"u{index % USERS:02d}", "session": f"s{index % 10}"}
            began = time.perf_counter()
            response = await conn.request("POST", CREATE, payload(**fields))
            seconds.append(time.perf_counter() - began)
            if response.status != 200:
                raise RuntimeError(f"a create answered {response.status}: {response.body[:300]!r}")
        calls = await command_calls(b.redis)
    return {
        "creates": count,
        "labels": 2 if labelled else 0,
        "redis_commands_per_create": round(sum(calls.values()) / count, 2),
        "redis_commands": {name: round(n / count, 2) for name, n in calls.most_common()},
        "latency": distribution(seconds),
    }


async def list_cost(b: Bench) -> dict[str, Any]:
    sizes = {"small": b.plan.list_small, "large": b.plan.list_large}
    started = time.monotonic()
    failed = await asyncio.gather(*(_seed(b, TENANTS[name], n) for name, n in sizes.items()))
    seed_seconds = time.monotonic() - started
    if any(failed):
        raise RuntimeError(f"seeding failed: {sum(failed)} creates were not answered 200")
    queries = {name: await _query(b, name) for name in QUERIES}
    # a first create in the tenant warms its path; not counted
    await _create_cost(b, labelled=False)
    creates = {"no_labels": await _create_cost(b, False), "two_labels": await _create_cost(b, True)}
    plain, labelled = (creates[k]["redis_commands_per_create"] for k in ("no_labels", "two_labels"))
    return {
        "tenant_sizes": sizes,
        "users": USERS,
        "rare": RARE,
        "seed_seconds": round(seed_seconds, 1),
        "seed_per_s": round(sum(sizes.values()) / seed_seconds, 1),
        "connections": CONNECTIONS,
        "rounds": ROUNDS,
        "load_average": _load_average(),
        "by_query": queries,
        "create": creates,
        "commands_added_by_two_labels": round(labelled - plain, 2),
    }


def _load_average() -> str:
    """The machine's 1/5/15-minute load when the scenario ended: it is shared, and this says how much."""
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return ""
