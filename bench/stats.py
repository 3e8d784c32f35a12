"""Small statistics helpers: percentiles and distributions, in milliseconds."""

from __future__ import annotations

import math
from typing import Any


def percentile(values: list[float], p: float) -> float | None:
    """Linear interpolation between the closest ranks; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def distribution(seconds: list[float]) -> dict[str, Any]:
    """p50/p90/p99/max/mean of durations given in seconds, reported in milliseconds."""
    ms = [s * 1000 for s in seconds]
    return {
        "n": len(ms),
        "p50_ms": _round(percentile(ms, 50)),
        "p90_ms": _round(percentile(ms, 90)),
        "p99_ms": _round(percentile(ms, 99)),
        "max_ms": _round(max(ms) if ms else None),
        "mean_ms": _round(sum(ms) / len(ms) if ms else None),
    }


def ratio(value: float | None, base: float | None) -> float | None:
    if value is None or base is None or base == 0:
        return None
    return round(value / base, 3)


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)
