"""The interaction statuses of the API (spec §6, §8).

Every status string clients see exists here. Which status may follow which, and on what event, is the
lifecycle table's (protocol/lifecycle.py), which adds a state of its own (`cancelling`). Two states are
held but never shown (lifecycle.wire_status): `cancelling` is `cancelled` to clients, and `queued` (a
background run no worker has taken yet) is `in_progress`, as Google's API answers a background create;
clients with a closed list of statuses (the Vercel AI SDK's) know no `queued`.
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

#: the statuses clients see (and filter lists by, server/search/filters.py)
SHOWN: Final = ALL - {QUEUED}

#: A run holds the interaction: it can still produce output and be cancelled.
RUNNING: Final = frozenset({QUEUED, IN_PROGRESS})
#: Nothing more will happen on its own. `requires_action` and `requires_continuation` end the turn: the
#: client continues with a new interaction chained to this one.
FINISHED: Final = ALL - RUNNING
#: Ends for good (spec §8 "terminal statuses").
TERMINAL: Final = frozenset({COMPLETED, FAILED, CANCELLED, INCOMPLETE, BUDGET_EXCEEDED})
