"""Conversation histories this process has already decoded, so a long chain is not re-read every turn.

A finished interaction's history (its chain's steps, its input and its output) never changes, so the
runner keeps it when it settles a run, and the service when it walks a chain. The next turn that
continues from it takes the history from here and asks Redis only to check the chain (O(1)), not to send
it back. Entries go when a tenant deletes an interaction (any process: the delete is broadcast), when
they are older than `max_age`, or when the step budget is spent (least recently used first).
"""

from __future__ import annotations

import time
from collections import OrderedDict

from ..protocol.steps import Step

History = tuple[Step, ...]


class Histories:
    def __init__(self, max_steps: int = 200_000, max_age: float = 600.0, min_steps: int = 32) -> None:
        self.max_steps = max_steps
        #: shorter histories are not kept: reading them back is cheap, and most conversations are short
        self.min_steps = min_steps
        self.max_age = max_age
        self._entries: OrderedDict[tuple[str, str], tuple[float, History]] = OrderedDict()
        self._steps = 0
        #: bumped by every forget of a tenant: a history put by a run that started before it is stale
        self._generations: dict[str, int] = {}

    def get(self, tenant: str, interaction_id: str) -> History | None:
        key = (tenant, interaction_id)
        entry = self._entries.get(key)
        if entry is None:
            return None
        stored_at, history = entry
        if time.monotonic() - stored_at > self.max_age:
            self._drop(key)
            return None
        self._entries.move_to_end(key)
        return history

    def generation(self, tenant: str) -> int:
        return self._generations.get(tenant, 0)

    def put(self, tenant: str, interaction_id: str, history: History, generation: int | None = None) -> None:
        """Keep a history; with `generation` (read when it was gathered), only if no forget came since."""
        if not self.min_steps <= len(history) <= self.max_steps:
            return
        if generation is not None and generation != self.generation(tenant):
            return
        key = (tenant, interaction_id)
        self._drop(key)
        self._entries[key] = (time.monotonic(), history)
        self._steps += len(history)
        while self._steps > self.max_steps:
            self._drop(next(iter(self._entries)))

    def forget_tenant(self, tenant: str) -> None:
        self._generations[tenant] = self.generation(tenant) + 1
        for key in [k for k in self._entries if k[0] == tenant]:
            self._drop(key)

    def forget_all(self) -> None:
        """Drop everything (when forget broadcasts may have been missed)."""
        for tenant in {k[0] for k in self._entries}:
            self.forget_tenant(tenant)

    def _drop(self, key: tuple[str, str]) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._steps -= len(entry[1])

    def __len__(self) -> int:
        return len(self._entries)
