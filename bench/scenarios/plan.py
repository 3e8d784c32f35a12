"""How much of each scenario one run does: the full run of `make bench`, or `--quick`'s smoke run."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    quick: bool
    wrk_seconds: float
    wrk_repeats: int
    concurrency: tuple[int, ...]
    depths: tuple[int, ...]
    depth_seconds: float
    pickup_samples: int
    cancel_samples: int
    flood_streams: int
    flood_deltas: int
    first_event_samples: int
    first_token_delay: float
    #: scenario 6 (bench/scenarios/many.py): `many_streams` streams of each variant, at most
    #: `many_open_per_second` opened a second and `many_opening` at once. echo-slow's answer a word every
    #: `many_echo_word_delay_ms`, each lasting until `many_echo_slack_seconds` after the ramp's planned end;
    #: bench-drip's `drip_words` deltas, one every `drip_interval` but the last, which comes once all are
    #: open and have been for `many_hold_seconds`. Either ends `many_end_per_second` streams a second. The
    #: baseline relays `many_baseline_streams` drip streams
    many_streams: int
    many_baseline_streams: int
    many_open_per_second: float
    many_opening: int
    many_hold_seconds: float
    many_end_per_second: float
    many_echo_word_delay_ms: int
    many_echo_slack_seconds: float
    drip_words: int
    drip_interval: float
    #: scenario 7: one-turn creates per variant, whose `used_memory` delta is measured
    memory_creates: int
    #: scenario 8: wrk runs per path through the upstream process, and the background samples
    upstream_seconds: float
    upstream_repeats: int
    upstream_concurrency: tuple[int, ...]
    upstream_samples: int
    #: scenario 9: how many idle workers in turn, how long each count settles and is watched, pickups
    idle_workers: tuple[int, ...]
    idle_settle_seconds: float
    idle_window_seconds: float
    idle_pickup_samples: int
    #: scenario 10: rounds of one wrk run (seconds each) per server, metrics and access log on and off
    cost_rounds: int
    cost_seconds: float
    #: scenario 12: interactions seeded in the small and the large tenant, list requests per query and tenant
    list_small: int
    list_large: int
    list_requests: int
    #: scenario 13: rounds of one wrk run (seconds each) per server and concurrency, replica_acks 0 and 1
    acks_rounds: int
    acks_seconds: float
    #: scenario 14: rounds of one wrk run (seconds each) per server and concurrency, one Redis and a Cluster
    cluster_rounds: int
    cluster_seconds: float
    #: scenario 19: remote runs followed at once, the back's word pace (echo-slow), the window measured
    #: once every run is followed and has been for the settle time
    remote_runs: int
    remote_word_delay_ms: int
    remote_window_seconds: float
    remote_settle_seconds: float
    #: scenario 20: the seconds of each path's wrk run at c16 and at c1 (each then idle as long)
    trips_seconds: float
    trips_c1_seconds: float
    #: scenario 22: trials of A's backlog of background creates then B's one, with this many workers
    fair_trials: int
    fair_backlog: int
    fair_workers: int

    @classmethod
    def full(cls) -> Plan:
        return cls(
            quick=False,
            wrk_seconds=5,
            wrk_repeats=2,
            concurrency=(1, 16, 64),
            depths=(1, 10, 100, 1000),
            depth_seconds=3,
            pickup_samples=200,
            cancel_samples=100,
            flood_streams=4,
            flood_deltas=20_000,
            first_event_samples=100,
            first_token_delay=0.03,
            many_streams=10_000,
            many_baseline_streams=1000,
            many_open_per_second=300,
            many_opening=100,
            many_hold_seconds=3.0,
            many_end_per_second=1000,
            many_echo_word_delay_ms=3000,
            many_echo_slack_seconds=10.0,
            drip_words=5,
            drip_interval=1.0,
            memory_creates=3000,
            upstream_seconds=3,
            upstream_repeats=2,
            upstream_concurrency=(1, 16, 64),
            upstream_samples=100,
            idle_workers=(1, 10, 50),
            idle_settle_seconds=3.0,
            # a multiple of the heartbeat (2 s), the fallback poll (2 s) and the reaper's interval (3 s)
            idle_window_seconds=12.0,
            idle_pickup_samples=200,
            # turns of 2 s: 1 s turns gave twice the spread of ratios between rounds on a shared machine;
            # six rounds: with four, one round's ratio of 1.3-1.8x moved the median past the target in a
            # full run, while a profile puts metrics and the access log at 3-4% of the web process's samples
            cost_rounds=6,
            cost_seconds=2,
            list_small=1000,
            list_large=20_000,
            list_requests=300,
            # 2 concurrencies x 2 servers x 3 rounds x 2 s: about 35 s with the start-ups and warm-ups
            acks_rounds=3,
            acks_seconds=2,
            # the same turns as scenario 13's: about 45 s with the Cluster's start and the warm-ups
            cluster_rounds=3,
            cluster_seconds=2,
            # a brisk agent: a word every 200 ms, five events a second a run
            remote_runs=20,
            remote_word_delay_ms=200,
            remote_window_seconds=15.0,
            remote_settle_seconds=1.0,
            # a few thousand creates at c16 (~2,000/s), over a thousand at c1
            trips_seconds=3,
            trips_c1_seconds=2,
            # a trial is A's 2,000 creates (2-3 s) and their runs (a few seconds more)
            fair_trials=12,
            fair_backlog=2000,
            fair_workers=4,
        )

    @classmethod
    def quick_plan(cls) -> Plan:
        return cls(
            quick=True,
            wrk_seconds=1,
            wrk_repeats=1,
            concurrency=(1, 16, 64),
            depths=(1, 10, 100),
            depth_seconds=1,
            pickup_samples=30,
            cancel_samples=15,
            flood_streams=2,
            flood_deltas=2_000,
            first_event_samples=15,
            first_token_delay=0.02,
            many_streams=100,
            many_baseline_streams=100,
            many_open_per_second=500,
            many_opening=50,
            many_hold_seconds=0.5,
            many_end_per_second=500,
            many_echo_word_delay_ms=200,
            many_echo_slack_seconds=1.0,
            drip_words=4,
            drip_interval=0.1,
            memory_creates=200,
            upstream_seconds=1,
            upstream_repeats=1,
            upstream_concurrency=(1, 16),
            upstream_samples=20,
            idle_workers=(1, 5),
            idle_settle_seconds=1.0,
            idle_window_seconds=4.0,
            idle_pickup_samples=30,
            cost_rounds=1,
            cost_seconds=1,
            # a tenant no larger than PAGE_BUDGET is read whole by the budget query: its ratio means little
            list_small=200,
            list_large=2000,
            list_requests=60,
            acks_rounds=1,
            acks_seconds=1,
            cluster_rounds=1,
            cluster_seconds=1,
            remote_runs=4,
            remote_word_delay_ms=200,
            remote_window_seconds=3.0,
            remote_settle_seconds=0.5,
            trips_seconds=1,
            trips_c1_seconds=1,
            fair_trials=2,
            fair_backlog=200,
            fair_workers=4,
        )
