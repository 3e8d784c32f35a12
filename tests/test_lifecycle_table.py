"""The lifecycle table on its own (protocol/lifecycle.py), as h11 tests its `_state.py`: no server."""

from __future__ import annotations

import pytest

from server.protocol import lifecycle
from server.protocol import status as st
from server.protocol.lifecycle import CANCELLING, Event, Refused, moves, next_state, wire_status


def test_every_state_of_the_table_is_known() -> None:
    for (source, event), target in lifecycle.TRANSITIONS.items():
        assert source in lifecycle.STATES and target in lifecycle.STATES, (source, event, target)
    assert lifecycle.STATES == st.ALL | {CANCELLING}
    assert lifecycle.UNFINISHED | lifecycle.FINISHED == lifecycle.STATES
    assert not lifecycle.UNFINISHED & lifecycle.FINISHED


def test_nothing_leaves_a_finished_state() -> None:
    for state in lifecycle.FINISHED:
        for event in Event:
            with pytest.raises(Refused):
                next_state(state, event)


def test_every_event_is_used_and_every_unfinished_state_can_end() -> None:
    assert {event for _state, event in lifecycle.TRANSITIONS} == set(Event)
    for state in lifecycle.UNFINISHED:
        reachable = {state}
        while True:
            more = {t for (s, _e), t in lifecycle.TRANSITIONS.items() if s in reachable} - reachable
            if not more:
                break
            reachable |= more
        assert reachable & lifecycle.FINISHED, state


def test_a_queued_interaction_cannot_complete_without_running() -> None:
    with pytest.raises(Refused):
        next_state(st.QUEUED, Event.COMPLETE)
    assert next_state(st.QUEUED, Event.CLAIM) == st.IN_PROGRESS
    assert next_state(st.QUEUED, Event.FAIL) == st.FAILED


def test_cancel_goes_through_cancelling_which_clients_see_as_cancelled() -> None:
    assert next_state(st.QUEUED, Event.CANCEL) == CANCELLING
    assert next_state(st.IN_PROGRESS, Event.CANCEL) == CANCELLING
    assert wire_status(CANCELLING) == st.CANCELLED
    assert wire_status(st.IN_PROGRESS) == st.IN_PROGRESS
    # a run waiting for a worker, as Google's API shows a background one
    assert wire_status(st.QUEUED) == st.IN_PROGRESS
    # a cancelling run cannot complete: it saves its output as cancelled (the race's other side)
    with pytest.raises(Refused):
        next_state(CANCELLING, Event.COMPLETE)
    assert next_state(CANCELLING, Event.SAVE_CANCELLED) == st.CANCELLED
    # a second cancel is not a move: the store reports the state it found
    with pytest.raises(Refused):
        next_state(CANCELLING, Event.CANCEL)
    assert CANCELLING in lifecycle.UNFINISHED


def test_a_lost_run_fails_unless_it_was_cancelled() -> None:
    assert next_state(st.IN_PROGRESS, Event.LOSE) == st.FAILED
    assert next_state(CANCELLING, Event.LOSE) == st.CANCELLED


def test_every_ending_status_of_a_turn_has_its_event() -> None:
    for status, event in lifecycle.END_EVENTS.items():
        source = CANCELLING if event is Event.SAVE_CANCELLED else st.IN_PROGRESS
        assert next_state(source, event) == status
    # a stop by this server (its client went away) keeps what was made, as cancelled
    assert next_state(st.IN_PROGRESS, Event.STOP) == st.CANCELLED


def test_moves_are_what_the_scripts_receive() -> None:
    assert moves(Event.CANCEL) == (("in_progress", CANCELLING), ("queued", CANCELLING))
    assert moves(Event.CLAIM) == (("in_progress", "in_progress"), ("queued", "in_progress"))
    assert moves(Event.FAIL) == (("in_progress", "failed"), ("queued", "failed"))
    assert lifecycle.WRITABLE == {st.IN_PROGRESS}
