"""Google's agents as remote runs, against the stateful fake of Google's API (tests/fakes/google_remote.py):
the fake runs each interaction on its own clock, so what the backend does with a run Google holds (follow
it, take a cut stream up, poll it, cancel it, delete it, follow it again from another worker) is checked
on Google's wire, and counted where it lands."""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from google import genai
from google.genai._interactions import BadRequestError, NotFoundError

from ..fakes.gemini import gemini_error
from ..fakes.google_remote import GoogleFake
from ..fakes.google_runs import Behaviour
from ..inproc import ThreadedApp
from ..replies import error_of, output_text_of, steps_of, streamed_text
from ..support import Stack, new_key, running_stack, sdk
from ..test_lost_runs import Follower, _attempts, _create, _field, _record, _text
from ..waiting import until
from .common import GOOGLE_KEY, SECRETS, VERTEX_PROJECT, create, finished, remote_id_of, step_types

SLOW = Behaviour(word_seconds=0.05)
#: 10 s of a slow agent
WORDS = " ".join(f"w{i}" for i in range(200))


def words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


def test_the_fake_speaks_the_official_sdks_wire(google: GoogleFake) -> None:
    """The SDK itself against the fake: a background create, its stream and a resume with event ids, a
    poll with built-in tool steps, a cancel once it has ended, a delete."""
    google.behaviour = Behaviour(search=True, thought=True)
    ai = sdk(google.base_url, GOOGLE_KEY)
    made = create(ai, agent="deep-research-pro-preview-12-2025", input="one two", background=True)
    assert made.status == "in_progress" and not made.steps
    events = list(ai.interactions.get(made.id, stream=True))
    assert [e.event_id for e in events] == [f"evt_{n}" for n in range(1, len(events) + 1)]
    assert events[0].event_type == "interaction.created" and events[0].interaction.id == made.id
    assert events[-1].event_type == "interaction.completed"
    assert events[-1].interaction.status == "completed"
    after = list(ai.interactions.get(made.id, stream=True, last_event_id="evt_5"))
    assert [e.event_id for e in after] == [e.event_id for e in events[5:]]
    got = ai.interactions.get(made.id)
    kinds = ["user_input", "google_search_call", "google_search_result", "thought", "model_output"]
    assert [step.type for step in steps_of(got)] == kinds and got.output_text == "one two"
    with pytest.raises(BadRequestError):
        ai.interactions.cancel(made.id)  # it has ended
    ai.interactions.delete(made.id)
    with pytest.raises(NotFoundError):
        ai.interactions.get(made.id)
    assert google.counts == Counter(creates=1, streams=2, polls=1, cancels=1, deletes=1)


def test_an_agent_run_is_followed_to_its_end(
    ai: genai.Client, front: ThreadedApp, api_key: str, google: GoogleFake
) -> None:
    google.behaviour = Behaviour(word_seconds=0.02, search=True, thought=True)
    job = create(ai, agent="gemini-agent-fake", input="one two three four", background=True)
    done = finished(ai, job.id)
    assert done.status == "completed", done.errors
    there = google.only()
    assert remote_id_of(front, api_key, job.id) == there.id and there.status == "completed"
    assert output_text_of(done) == there.text() == "one two three four"
    kinds = ["user_input", "google_search_call", "google_search_result", "thought", "model_output"]
    assert step_types(done) == kinds
    sent = google.requests[0].json()
    assert (sent["agent"], sent["background"], sent["stream"], sent.get("store", True)) == (
        "gemini-agent-fake",
        True,
        True,
        True,
    )
    assert (google.counts["creates"], there.streams, there.polls, there.cancels) == (1, 1, 0, 0)


def test_a_stream_cut_mid_run_is_taken_up_after_its_last_event(ai: genai.Client, google: GoogleFake) -> None:
    google.behaviour = Behaviour(word_seconds=0.02)
    google.cuts.append(6)  # created, in_progress, step.start and three words, then the connection drops
    text = words(12)
    job = create(ai, agent="gemini-agent-fake", input=text, background=True)
    done = finished(ai, job.id)
    there = google.only()
    assert (google.counts["creates"], there.streams) == (1, 2), "resumed, not created again"
    [resumed] = [r for r in google.requests if r.method == "GET"]
    assert resumed.path == f"/v1beta/interactions/{there.id}"
    assert resumed.query == "stream=true&last_event_id=evt_6"
    assert done.status == "completed" and output_text_of(done) == text == there.text()
    assert streamed_text(ai.interactions.get(job.id, stream=True)) == text, "each word once"


def test_a_stream_that_cannot_be_had_is_polled_to_its_end(ai: genai.Client, google: GoogleFake) -> None:
    """The stream is cut mid-step, the GET that would take it up refused (405): the interaction is polled
    until it ends, and the rest of it is shown after what was streamed, each word once."""
    google.behaviour = SLOW
    google.cuts.append(5)  # two words streamed
    google.refuse_stream_gets = True
    text = words(30)
    job = create(ai, agent="gemini-agent-fake", input=text, background=True)
    done = finished(ai, job.id, timeout=40)
    there = google.only()
    assert done.status == "completed", done.errors
    assert (google.counts["creates"], there.streams, google.counts["refused"]) == (1, 1, 1)
    assert there.polls >= 1
    assert output_text_of(done) == text and step_types(done) == ["user_input", "model_output"]
    assert streamed_text(ai.interactions.get(job.id, stream=True)) == text


def test_our_cancel_reaches_google_at_once_and_keeps_the_output(ai: genai.Client, google: GoogleFake) -> None:
    google.behaviour = SLOW
    job = create(ai, agent="gemini-agent-fake", input=WORDS, background=True)
    with ai.interactions.get(job.id, stream=True) as stream:  # until its third word is out
        deltas = (e for e in stream if e.event_type == "step.delta")
        assert [next(deltas).delta.text for _ in range(3)] == ["w0", " w1", " w2"]
    there = google.only()
    asked = time.monotonic()
    assert ai.interactions.cancel(job.id).status == "cancelled"
    cancelled_at = until(lambda: there.cancelled_at, timeout=10, interval=0.005)
    took = cancelled_at - asked
    assert there.status == "cancelled" and google.counts["cancels"] == 1
    kept = output_text_of(ai.interactions.get(job.id))
    assert kept.startswith("w0 w1 w2") and there.text().startswith(kept)
    assert len(there.text().split()) < 200, "it stopped there"
    # measured 8-21 ms (in-process front and worker); the bound is for a loaded machine
    assert took < 2.0, f"the remote run's cancel arrived {took * 1000:.0f} ms after ours was asked"


def test_a_model_turn_without_a_script_is_run_by_the_fake_and_kept_nowhere_there(
    ai: genai.Client, google: GoogleFake
) -> None:
    events = list(ai.interactions.create(model="gemini-3-flash-preview", input="say this back", stream=True))
    assert streamed_text(events) == "say this back"
    there = google.only()
    assert google.requests[0].json()["store"] is False
    assert not there.stored and there.id not in google.interactions


def test_our_delete_deletes_it_at_google(ai: genai.Client, google: GoogleFake) -> None:
    job = create(ai, agent="gemini-agent-fake", input="to be deleted", background=True)
    assert finished(ai, job.id).status == "completed"
    there = google.only()
    ai.interactions.delete(job.id)
    assert there.id not in google.interactions and google.counts["deletes"] == 1
    [deleting] = [r for r in google.requests if r.method == "DELETE"]
    assert deleting.path == f"/v1beta/interactions/{there.id}"
    with pytest.raises(NotFoundError):
        ai.interactions.get(job.id)


def test_our_delete_of_a_running_agent_cancels_it_at_google_first(
    ai: genai.Client, google: GoogleFake
) -> None:
    """Google's delete does not stop a run (nor does the fake's): deleted running, it ran on there, unseen
    and paid for, to its end."""
    google.behaviour = SLOW
    job = create(ai, agent="gemini-agent-fake", input=WORDS, background=True)
    until(lambda: google.created and len(google.created[0].text().split()) >= 3)
    there = google.only()
    ai.interactions.delete(job.id)
    assert there.id not in google.interactions
    assert there.status == "cancelled", "stopped before it was deleted"
    sent = [(r.method, r.path.rsplit("/", 1)[-1]) for r in google.requests if r.method != "GET"]
    assert sent[:3] == [("POST", "interactions"), ("POST", "cancel"), ("DELETE", there.id)]
    with pytest.raises(NotFoundError):
        ai.interactions.get(job.id)


def test_an_error_event_fails_the_run_with_googles_words_keeping_its_output(
    ai: genai.Client, google: GoogleFake
) -> None:
    google.behaviour = Behaviour(error=("internal", "The agent broke down"))
    job = create(ai, agent="gemini-agent-fake", input="one two", background=True)
    done = finished(ai, job.id)
    assert done.status == "failed" and "The agent broke down" in done.errors[0].message
    assert output_text_of(done) == "one two"
    assert google.counts["creates"] == 1 and google.only().streams == 1, "an ended run is not followed again"


def test_a_run_cancelled_at_google_fails_here_at_once_saying_so(ai: genai.Client, google: GoogleFake) -> None:
    """Someone else cancels the remote run: the run here ends as soon as it reads that end, failed, with
    what it had; the ended run is not followed again (it was, ten times over half a minute, to end with
    "the stream ended before interaction.completed")."""
    google.behaviour = SLOW
    job = create(ai, agent="gemini-agent-fake", input=WORDS, background=True)
    until(lambda: google.created and len(google.created[0].text().split()) >= 3)
    there = google.only()
    cancelled = httpx.post(f"{google.base_url}/v1beta/interactions/{there.id}/cancel", timeout=10)
    assert cancelled.status_code == 200, cancelled.text
    done = finished(ai, job.id, timeout=60)
    assert done.status == "failed"
    assert "cancelled" in error_of(done)[1]
    assert output_text_of(done).startswith("w0 w1 w2") and there.text().startswith(output_text_of(done))
    assert there.streams == 1, "an ended run is not followed again"


def test_a_429_on_the_create_is_retried_when_its_retry_info_says(
    ai: genai.Client, google: GoogleFake
) -> None:
    google.add(gemini_error(429, "Resource has been exhausted", "RESOURCE_EXHAUSTED", retry_delay="1s"))
    job = create(ai, agent="gemini-agent-fake", input="at last", background=True)
    done = finished(ai, job.id)
    assert done.status == "completed" and output_text_of(done) == "at last"
    refused, made = google.requests
    assert made.received_at - refused.received_at >= 0.9, "the 429's RetryInfo was waited out"
    assert google.counts["creates"] == 1


def test_a_429_on_the_resume_is_waited_out_as_its_retry_info_says(
    ai: genai.Client, google: GoogleFake
) -> None:
    google.behaviour = Behaviour(word_seconds=0.02)
    google.cuts.append(4)
    google.stream_get_errors.append(
        gemini_error(429, "Resource has been exhausted", "RESOURCE_EXHAUSTED", retry_delay="1.5s")
    )
    text = words(10)
    job = create(ai, agent="gemini-agent-fake", input=text, background=True)
    assert output_text_of(finished(ai, job.id)) == text
    refused, resumed = [r for r in google.requests if r.method == "GET"]
    assert refused.query == resumed.query == "stream=true&last_event_id=evt_4"
    assert resumed.received_at - refused.received_at >= 1.4, "the wait Google named, not a backoff's"


def test_a_429_on_a_poll_is_waited_out_as_its_retry_info_says(ai: genai.Client, google: GoogleFake) -> None:
    google.behaviour = Behaviour(word_seconds=0.02)
    google.cuts.append(4)
    google.refuse_stream_gets = True
    google.poll_errors.append(
        gemini_error(429, "Resource has been exhausted", "RESOURCE_EXHAUSTED", retry_delay="2s")
    )
    text = words(10)
    job = create(ai, agent="gemini-agent-fake", input=text, background=True)
    assert output_text_of(finished(ai, job.id, timeout=30)) == text
    polls = [r for r in google.requests if r.method == "GET" and r.query == ""]
    assert len(polls) >= 2
    assert polls[1].received_at - polls[0].received_at >= 1.9, "the wait Google named, not a backoff's"


def test_an_agent_through_vertex(ai: genai.Client, google: GoogleFake) -> None:
    """The Vertex form of the route: its paths, a bearer token; a cut stream taken up there too."""
    google.behaviour = Behaviour(word_seconds=0.02)
    google.cuts.append(4)
    job = create(ai, agent="vertex-agent-1", input="by way of vertex", background=True)
    assert output_text_of(finished(ai, job.id)) == "by way of vertex"
    ai.interactions.delete(job.id)
    there = google.only()
    base = f"/v1beta1/projects/{VERTEX_PROJECT}/locations/us-central1/interactions"
    assert [(r.method, r.path) for r in google.requests] == [
        ("POST", base),
        ("GET", f"{base}/{there.id}"),
        ("DELETE", f"{base}/{there.id}"),
    ]
    assert google.requests[1].query == "stream=true&last_event_id=evt_4"
    headers = google.requests[0].headers
    assert headers["authorization"] == f"Bearer {GOOGLE_KEY}" and "x-goog-api-key" not in headers


# ---------------------------------------------------------------------------------------------------------
# A worker killed while it follows a remote run (processes: the front above runs its worker in-process)


@pytest.fixture(scope="module")
def killable(google: GoogleFake, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One web process, and workers the test starts and kills; `gemini-*` is the fake's."""
    models = (
        f'[[models]]\nmatch = "gemini-*"\nbackend = "interactions"\nbase_url = "{google.base_url}"\n'
        'api_key_env = "IX_E2E_GOOGLE_KEY"\n'
    )
    lease = {
        "max_attempts": 2,
        "lease_seconds": 1.5,
        "heartbeat_seconds": 0.3,
        "reaper_interval_seconds": 0.1,
    }
    workdir = Path(tmp_path_factory.mktemp("google-killable"))
    with running_stack(workdir, config={"runner": lease}, models=models, env=SECRETS) as stack:
        yield stack


def test_a_killed_workers_remote_run_is_followed_by_the_next_not_created_again(
    killable: Stack, google: GoogleFake
) -> None:
    google.behaviour = SLOW
    url, key, text = killable.url, new_key(), words(60)  # 3 s at the fake
    worker = killable.start_worker(**SECRETS)
    interaction_id = _create(url, key, {"agent": "gemini-agent-k", "input": text, "background": True})
    follower = Follower(url, key, f"/v1beta/interactions/{interaction_id}")
    until(lambda: follower.deltas() >= 3, timeout=20)
    worker.signal(signal.SIGKILL)
    worker.wait(5)
    killable.start_worker(**SECRETS)
    follower.join()
    assert follower.events[-1]["event_type"] == "interaction.completed", follower.events[-1]
    assert follower.text() == text == _text(_record(url, key, interaction_id)), "each word once"
    there = google.only()
    assert _field(killable, key, interaction_id, "rid") == there.id
    assert (google.counts["creates"], there.streams) == (1, 2), "followed again, not created again"
    [again] = [r for r in google.requests if r.method == "GET"]
    assert again.query == "stream=true", "from its start"
    assert _attempts(killable, key, interaction_id) == 2
