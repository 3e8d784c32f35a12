"""The usage totals as Prometheus counters (ix_usage_*), and the requests tenants' limits refused
(ix_limit_refusals_total): counted by the process whose settle landed, so a
refused settle (a cancel or a takeover won) counts nothing here either. Redis's totals (store/usage.py) are
the record; these are a process's view of them, lost with a process killed before its next flush.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter

from . import buffer, metrics
from .families import OVER_LIMIT, USAGE_CALLS, USAGE_INTERACTIONS, USAGE_TOKENS

#: the token kinds of an amounts argument (store/usage.py AMOUNTS), in its order; then the calls
_KINDS: Final = ("input", "output", "cached", "thought", "total")

_by_tenant = False
#: the buffers of the children counted so far: a child's lookup (`labels`) costs more than the count
_children: dict[tuple[object, ...], buffer.Count] = {}
_MAX_CACHED = 4096


def configure(by_tenant: bool) -> None:
    """At a process's start: whether the counters carry the tenant ([metrics] usage_by_tenant)."""
    global _by_tenant
    _by_tenant = by_tenant


def over_limit(limit: str) -> None:
    """A request a tenant's limit refused (server/limits/; `limit` is a field of [auth.limits])."""
    if metrics.on():
        buffer.count(OVER_LIMIT.labels(limit)).inc()


def counted(model: str, status: str, amounts: str, tenant: str) -> None:
    """An interaction of `model` ended `status` and was counted with `amounts` ("in out cached thought
    total calls")."""
    if not metrics.on():
        return
    label, shown = metrics.model_label(model), tenant if _by_tenant else ""
    _child(USAGE_INTERACTIONS, label, status, shown).inc()
    *tokens, calls = (int(n) for n in amounts.split())
    for kind, n in zip(_KINDS, tokens, strict=True):
        if n:
            _child(USAGE_TOKENS, label, kind, shown).inc(n)
    if calls:
        _child(USAGE_CALLS, label, shown).inc(calls)


def _child(family: Counter, *labels: str) -> buffer.Count:
    key = (family, *labels)
    found = _children.get(key)
    if found is None:
        found = buffer.count(family.labels(*labels))
        if len(_children) < _MAX_CACHED:
            _children[key] = found
    return found
