"""Paths taking turns on wrk runs, the order swapped every round (scenarios 17 and 23): on a shared machine
a busy moment moves one round's ratio and not the median of the rounds, and both paths see the machine
alike, where runs of one path then the other would each see a different part of it."""

from __future__ import annotations

import statistics
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..stats import ratio
from ..wrk import WrkResult, pooled

#: one wrk run of a path, of the seconds given
Run = Callable[[float], Awaitable[WrkResult]]
#: each path's warm-up before the rounds (pools, scripts, caches; a fresh server's first seconds)
WARM_UP_SECONDS = 2.0


async def take_turns(
    runs: Mapping[str, Run], rounds: int, seconds: float, warm_up: float = WARM_UP_SECONDS
) -> dict[str, list[WrkResult]]:
    """Each path's warm-up, then `rounds` rounds of one run of each, in the order given, then reversed."""
    for run in runs.values():
        await run(warm_up)
    names = list(runs)
    out: dict[str, list[WrkResult]] = {name: [] for name in names}
    for index in range(rounds):
        for name in names if index % 2 == 0 else names[::-1]:
            out[name].append(await runs[name](seconds))
    return out


def cpu_compared(runs: dict[str, list[WrkResult]], of: str, over: str) -> dict[str, Any]:
    """Each path pooled over its rounds, and `of`'s server CPU per request over `over`'s: pooled, by round,
    and the median of the rounds (what a target reads)."""
    pools = {name: pooled(results) for name, results in runs.items()}
    rounds = [ratio(a.server_cpu_ms, b.server_cpu_ms) for a, b in zip(runs[of], runs[over], strict=True)]
    known = [value for value in rounds if value is not None]
    return {
        **pools,
        "cpu_ratio": ratio(pools[of]["server_cpu_ms_per_req"], pools[over]["server_cpu_ms_per_req"]),
        "rps_ratio": ratio(pools[of]["rps"], pools[over]["rps"]),
        "cpu_ratio_by_round": rounds,
        "cpu_ratio_median_round": round(statistics.median(known), 3) if known else None,
    }
