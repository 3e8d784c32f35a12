"""The seven scenarios of issue 6, the two of issue 12, the one of issue 13, the one of issue 14, the one of
issue 16, what `[store] replica_acks` costs (13) and one Redis against a Redis Cluster (14), each measured
beside a baseline taken in the same run.

Every scenario takes the `Bench` (the running stack, the fake upstream, the plan) and returns a plain dict
that goes into bench/results/latest.json; bench/targets.py, bench/tables.py and bench/cost_tables.py turn
those into the targets and the tables. One module per kind of measurement: create.py (1, 2: wrk on create),
background.py (3, 4), relay.py (5) and many.py (6) on the streaming requests of streaming.py, memory.py (7),
upstream.py (8: creates through an upstream in a process of its own), idle.py (9: idle workers), observe.py
(10: what metrics and the access log cost), webhooks.py (11: an interaction's end to its webhook's receiver),
listing.py (12: a list page in a small and a large tenant, and what the search indexes add to a create),
replicas.py (13: what `[store] replica_acks = 1` costs a stored create), cluster.py (14: a stored create
on one Redis and on a 3-node Redis Cluster, from many tenants), deadlines.py (15: what a write deadline costs
the store's create),
retries.py (16, issue 25: how late webhook retries start under steady traffic), dialects.py (17, issue 26:
the same create and stream through OpenAI's Responses API and Google's Interactions API), generate.py (18,
issue 27: a streamGenerateContent through an upstream, beside the bare relay and a store=false interaction),
triggers.py (21, issue 29: fire lateness of 1,000 triggers due in one minute, idle cost of 10,000),
limits.py (23, issue 30: what a tenant's limits cost a create, in CPU and in Redis round trips; 22 is
fairness.py's, another branch's), with turns.py (paths taking turns on wrk runs: 17 and 23).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .background import background_pickup, cancel_latency
from .cluster import cluster_cost
from .common import Bench
from .create import chain_depth, create_throughput
from .deadlines import deadline_cost
from .dialects import dialect_paths
from .follow import remote_follow
from .generate import generate_stream
from .idle import idle_workers
from .limits import limits_cost
from .listing import list_cost
from .many import many_streams
from .memory import redis_memory
from .observe import observability_cost
from .plan import Plan
from .relay import stream_relay
from .replicas import replica_acks_cost
from .retries import webhook_retries
from .triggers import trigger_fires
from .trips import round_trips
from .upstream import upstream_path
from .webhooks import webhook_delivery

__all__ = ["DEFAULT", "NUMBERS", "SCENARIOS", "Bench", "Plan"]

SCENARIOS: dict[str, Callable[[Bench], Any]] = {
    "create": create_throughput,
    "chain": chain_depth,
    "pickup": background_pickup,
    "cancel": cancel_latency,
    "stream": stream_relay,
    "many_streams": many_streams,
    "memory": redis_memory,
    "upstream": upstream_path,
    "idle_workers": idle_workers,
    "observability": observability_cost,
    "webhooks": webhook_delivery,
    "list": list_cost,
    "replica_acks": replica_acks_cost,
    "cluster": cluster_cost,
    "deadlines": deadline_cost,
    "retries": webhook_retries,
    "dialects": dialect_paths,
    "generate": generate_stream,
    "remote_follow": remote_follow,
    "round_trips": round_trips,
    "triggers": trigger_fires,
    "limits": limits_cost,
}

#: each scenario's number, in bench/README.md and the Targets table: its place above
NUMBERS: dict[str, str] = {name: str(place) for place, name in enumerate(SCENARIOS, 1)}
# 22 is fairness's (bench/scenarios/fairness.py, on a branch not merged yet): limits keeps 23 whichever
# lands first; with fairness before it in SCENARIOS, this line changes nothing
NUMBERS["limits"] = "23"

#: what `make bench` runs by default, about 6 minutes: the request path's figures (a create, a chain, a
#: background run's pickup and cancel, a stream, the bytes and the Redis round trips a stored create costs,
#: a turn through an upstream). `--all` adds the rest, about 9 minutes more: what stays fixed unless its own
#: code changes (10,000 streams, idle workers, metrics, webhooks and their retries, the list, replica acks,
#: a Cluster, write deadlines, the other dialects, following remote runs)
DEFAULT: tuple[str, ...] = (
    "create",
    "chain",
    "pickup",
    "cancel",
    "stream",
    "memory",
    "upstream",
    "round_trips",
)
