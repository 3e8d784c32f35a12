"""The usage totals as Prometheus counters (ix_usage_*): counted by the process whose settle landed, so a
refused settle (a cancel or a takeover won) counts nothing here either. Redis's totals (store/usage.py) are
the record; these are a process's view of them, lost with a process killed before its next flush.
"""

from __future__ import annotations

from typing import Final

from . import buffer, metrics
from .families import USAGE_CALLS, USAGE_INTERACTIONS, USAGE_TOKENS

#: the token kinds of an amounts argument (store/usage.py AMOUNTS), in its order; then the calls
_KINDS: Final = ("input", "output", "cached", "thought", "total")

_by_tenant = False


def configure(by_tenant: bool) -> None:
    """At a process's start: whether the counters carry the tenant ([metrics] usage_by_tenant)."""
    global _by_tenant
    _by_tenant = by_tenant


def counted(model: str, status: str, amounts: str, tenant: str) -> None:
    """An interaction of `model` ended `status` and was counted with `amounts` ("in out cached thought
    total calls")."""
    if not metrics.on():
        return
    label, shown = metrics.model_label(model), tenant if _by_tenant else ""
    buffer.count(USAGE_INTERACTIONS.labels(label, status, shown)).inc()
    *tokens, calls = (int(n) for n in amounts.split())
    for kind, n in zip(_KINDS, tokens, strict=True):
        if n:
            buffer.count(USAGE_TOKENS.labels(label, kind, shown)).inc(n)
    if calls:
        buffer.count(USAGE_CALLS.labels(label, shown)).inc(calls)
