"""The lifecycle of a stored interaction: every status change, as data, in one table.

Rules (h11's `_state.py` is the model):

1. A status changes only by an event, and only as `TRANSITIONS[(status, event)]` says; a pair not in the
   table is refused. The store's Lua scripts are not told statuses: they are given, for the event asked
   for, the pairs (from, to) of this table (`moves`), and refuse any other current status, atomically.
2. `cancelling` is a state of its own: the API has cancelled the interaction (clients see `cancelled`),
   and its run is still saving the output it made. Only `SAVE_CANCELLED` (the run, or someone settling
   for a run that is gone) ends it, as `cancelled`. A chain cannot continue from it yet.
3. A run writes its log only while the interaction is `in_progress` (`WRITABLE`), and only under its
   fence (checked by the scripts, not part of the status).
4. Creation is not a transition: a record is born `queued` (background), `in_progress` (a run starts at
   once) or already finished (a foreground call stored once it has its answer).

    queued ──CLAIM──▶ in_progress ──COMPLETE / STOP_INCOMPLETE / REQUIRE_ACTION / FAIL──▶ (finished)
      │                    │ └──EXCEED_BUDGET (its tenant's token limit)──▶ budget_exceeded
      │  └─FAIL─▶ failed   │  ▲ CLAIM, REQUEUE (a new runner, a new fence)
      │                    │  │
      └──CANCEL──▶ cancelling ◀──CANCEL──┘
                      │ SAVE_CANCELLED, LOSE
                      ▼
                  cancelled ◀──STOP── in_progress     in_progress ──LOSE──▶ failed (its runner is gone)
"""

from __future__ import annotations

import enum
from typing import Final

from . import status as st

#: the API has cancelled the interaction; its run is saving its output (shown as `cancelled`)
CANCELLING: Final = "cancelling"


class Event(enum.Enum):
    #: a runner takes the interaction (a worker's job, or a run taken over after a hand-back)
    CLAIM = "claim"
    #: a run is handed to a new job (lost runner, or a worker shutting down): only the fence moves
    REQUEUE = "requeue"
    #: the API cancels it
    CANCEL = "cancel"
    #: the run ends: the model answered, stopped early, asks for a function result, or it failed
    COMPLETE = "complete"
    STOP_INCOMPLETE = "stop_incomplete"
    #: the tenant's token limit (server/limits/) stops the run: what it made is kept
    EXCEED_BUDGET = "exceed_budget"
    REQUIRE_ACTION = "require_action"
    FAIL = "fail"
    #: a cancelled run's output is saved
    SAVE_CANCELLED = "save_cancelled"
    #: this server stops a run (its streaming client went away, `on_stream_disconnect = "cancel"`): what it
    #: made is kept, as cancelled
    STOP = "stop"
    #: its runner is gone for good (the reaper): a cancelled one is settled as such, any other fails
    LOSE = "lose"


TRANSITIONS: Final[dict[tuple[str, Event], str]] = {
    (st.QUEUED, Event.CLAIM): st.IN_PROGRESS,
    (st.IN_PROGRESS, Event.CLAIM): st.IN_PROGRESS,
    (st.IN_PROGRESS, Event.REQUEUE): st.IN_PROGRESS,
    (st.QUEUED, Event.CANCEL): CANCELLING,
    (st.IN_PROGRESS, Event.CANCEL): CANCELLING,
    (st.IN_PROGRESS, Event.COMPLETE): st.COMPLETED,
    (st.IN_PROGRESS, Event.STOP_INCOMPLETE): st.INCOMPLETE,
    (st.IN_PROGRESS, Event.EXCEED_BUDGET): st.BUDGET_EXCEEDED,
    (st.IN_PROGRESS, Event.REQUIRE_ACTION): st.REQUIRES_ACTION,
    (st.IN_PROGRESS, Event.FAIL): st.FAILED,
    # a background interaction whose request the backend refuses before any run
    (st.QUEUED, Event.FAIL): st.FAILED,
    (CANCELLING, Event.SAVE_CANCELLED): st.CANCELLED,
    (st.IN_PROGRESS, Event.STOP): st.CANCELLED,
    (st.IN_PROGRESS, Event.LOSE): st.FAILED,
    (CANCELLING, Event.LOSE): st.CANCELLED,
}

#: every state a record can be in
STATES: Final = frozenset({*st.ALL, CANCELLING})
#: a run still holds the interaction: a chain cannot continue from it, a stream of it follows its log
UNFINISHED: Final = frozenset({st.QUEUED, st.IN_PROGRESS, CANCELLING})
FINISHED: Final = STATES - UNFINISHED
#: a run may append to its log
WRITABLE: Final = frozenset({st.IN_PROGRESS})
#: the ends an interaction's webhooks hear of (server/webhooks/events.py names their events); `cancelling`
#: is not one: they hear of the cancel once the run's output is saved, as `cancelled`
NOTIFIED: Final = frozenset(
    {st.COMPLETED, st.INCOMPLETE, st.BUDGET_EXCEEDED, st.FAILED, st.CANCELLED, st.REQUIRES_ACTION}
)

#: the event that ends a run with each of the statuses a model's turn can end with
END_EVENTS: Final[dict[str, Event]] = {
    st.COMPLETED: Event.COMPLETE,
    st.INCOMPLETE: Event.STOP_INCOMPLETE,
    st.BUDGET_EXCEEDED: Event.EXCEED_BUDGET,
    st.REQUIRES_ACTION: Event.REQUIRE_ACTION,
    st.FAILED: Event.FAIL,
    st.CANCELLED: Event.SAVE_CANCELLED,
}


class Refused(Exception):
    """`event` is not allowed in `state` (a bug in the caller, not a race: races are the store's)."""

    def __init__(self, state: str, event: Event) -> None:
        super().__init__(f"{event.name} is not allowed when the interaction is {state}")
        self.state = state
        self.event = event


def next_state(state: str, event: Event) -> str:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise Refused(state, event) from None


def moves(event: Event) -> tuple[tuple[str, str], ...]:
    """The (from, to) pairs of `event`, as the store's scripts receive them."""
    return tuple(sorted((source, target) for (source, ev), target in TRANSITIONS.items() if ev is event))


#: the states clients see as another status: their cancel has happened; and a run waits for a worker as
#: Google's background runs show it (the states stay, for the pickup, the reaper and cancels to tell apart)
_SHOWN_AS: Final = {CANCELLING: st.CANCELLED, st.QUEUED: st.IN_PROGRESS}


def wire_status(state: str) -> str:
    """The status clients see of a state (every rendering of an interaction or its events asks here)."""
    return _SHOWN_AS.get(state, state)
