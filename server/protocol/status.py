"""The interaction status machine (spec §6, §8).

Every status string of the API exists here, with the moves between them. The Lua scripts in store/scripts
make each move atomically; they name the statuses they compare against literally (queued and in_progress
are the running ones), so a change here must be made there too.
"""

from __future__ import annotations

from typing import Final

QUEUED: Final = "queued"
IN_PROGRESS: Final = "in_progress"
REQUIRES_ACTION: Final = "requires_action"
REQUIRES_CONTINUATION: Final = "requires_continuation"
COMPLETED: Final = "completed"
FAILED: Final = "failed"
CANCELLED: Final = "cancelled"
INCOMPLETE: Final = "incomplete"
BUDGET_EXCEEDED: Final = "budget_exceeded"

ALL: Final = frozenset(
    {
        QUEUED,
        IN_PROGRESS,
        REQUIRES_ACTION,
        REQUIRES_CONTINUATION,
        COMPLETED,
        FAILED,
        CANCELLED,
        INCOMPLETE,
        BUDGET_EXCEEDED,
    }
)

#: A run holds the interaction: it can still produce output and be cancelled.
RUNNING: Final = frozenset({QUEUED, IN_PROGRESS})
#: Nothing more will happen on its own. `requires_action` and `requires_continuation` end the turn: the
#: client continues with a new interaction chained to this one.
FINISHED: Final = ALL - RUNNING
#: Ends for good (spec §8 "terminal statuses").
TERMINAL: Final = frozenset({COMPLETED, FAILED, CANCELLED, INCOMPLETE, BUDGET_EXCEEDED})

_TRANSITIONS: Final[dict[str, frozenset[str]]] = {
    QUEUED: frozenset({IN_PROGRESS, CANCELLED, FAILED}),
    IN_PROGRESS: frozenset(FINISHED),
}


def can_move(current: str, new: str) -> bool:
    return new in _TRANSITIONS.get(current, frozenset())


def sources_of(new: str) -> list[str]:
    """The statuses from which `new` can be reached, for the Lua compare-and-set."""
    return sorted(s for s, targets in _TRANSITIONS.items() if new in targets)
