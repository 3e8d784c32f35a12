"""What every backend speaks: a request built from the history, and a stream of normalised events.

A backend turns the provider's stream into `UpstreamEvent`s, which are already in the API's terms (a step
skeleton, then deltas, then the end of the step). The runner numbers them, builds the output steps from
them and sends them to the event log; a backend never touches Redis or the client.
"""

from __future__ import annotations

import random
from collections.abc import AsyncGenerator
from typing import Any, Final, Protocol, runtime_checkable

import msgspec

from ..errors import ServerError
from ..protocol.deltas import Delta
from ..protocol.interaction import ErrorInfo, InteractionConfig, Usage
from ..protocol.steps import Step


class UpstreamRequest(msgspec.Struct, kw_only=True):
    #: the model name as requested by the client
    model: str
    #: the model name to send upstream
    upstream_model: str
    #: the whole conversation, oldest first: the chain's steps, then this turn's input
    history: list[Step]
    #: the interaction-scoped configuration (system_instruction, tools, generation_config, ...)
    config: InteractionConfig
    #: run by a worker (a background interaction): a backend may then hand the turn to a remote run
    background: bool = False
    #: the upstream's own run of this turn, already started (RemoteStarted): followed, never made again
    remote_id: str | None = None


class StepStarted(msgspec.Struct, kw_only=True):
    """A new output step begins; `step` is its skeleton (e.g. `{"type": "model_output"}`)."""

    step: Step


class StepDelta(msgspec.Struct, kw_only=True):
    """An increment of the current step."""

    delta: Delta


class StepEnded(msgspec.Struct, kw_only=True):
    """The current step is complete."""


class UsageReported(msgspec.Struct, kw_only=True):
    """Usage so far (cumulative: each report replaces the previous one)."""

    usage: Usage


class Finished(msgspec.Struct, kw_only=True):
    """The model is done. `status`: completed, incomplete, requires_action or failed."""

    status: str
    error: ErrorInfo | None = None


class RemoteStarted(msgspec.Struct, kw_only=True):
    """The upstream runs this turn as a run of its own (Google's background interaction), `remote_id`. The
    runner records it before it reads on, so that a re-run follows that run instead of starting another;
    it shows nothing to clients."""

    remote_id: str


UpstreamEvent = StepStarted | StepDelta | StepEnded | UsageReported | Finished | RemoteStarted


class UpstreamError(ServerError):
    """The upstream call failed. `status` is the upstream HTTP status (0 for no response).

    `misconfigured`: this server cannot make the call at all (a route's key variable is unset), so nothing
    was sent; like an upstream 401/403 it is this server's fault, not the client's, and no retry fixes it.
    """

    def __init__(
        self,
        backend: str,
        status: int,
        message: str,
        *,
        retry_after: float | None = None,
        timeout: bool = False,
        misconfigured: bool = False,
    ) -> None:
        if misconfigured:
            text = f"{backend} upstream not called: {message}"
        else:
            text = f"{backend} upstream error {status or ''}: {message}".replace("  ", " ")
        super().__init__(text)
        self.backend = backend
        self.status = status
        self.message = message
        self.retry_after = retry_after
        self.timeout = timeout
        self.misconfigured = misconfigured

    @property
    def retryable(self) -> bool:
        if self.misconfigured:
            return False
        return self.status in (0, 408, 429) or self.status >= 500


class Backend(Protocol):
    #: the backend's name (as configured), kept with provider-native data it produces
    name: str

    def check(self, request: UpstreamRequest) -> None:
        """Raise `InvalidArgument` for what this backend cannot take (a built-in tool, a modality)."""

    def stream(self, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
        """Call the upstream and yield its answer as normalised events. Raises `UpstreamError`."""
        ...

    async def aclose(self) -> None:
        """Release the backend's connections."""


@runtime_checkable
class RemoteRuns(Protocol):
    """A backend whose turns may run remotely (RemoteStarted): it cancels and deletes those runs."""

    async def cancel_remote(self, remote_id: str) -> None:
        """Stop the remote run (one already ended is left as it is). Raises `UpstreamError`."""

    async def delete_remote(self, remote_id: str) -> None:
        """Delete the remote run (one already gone is no error). Raises `UpstreamError`."""


def json_object(value: Any) -> dict[str, Any]:
    """A function call's arguments as an object, whatever the upstream sent."""
    return value if isinstance(value, dict) else {"value": value}


_jitter = random.Random()
#: the longest wait an upstream names (Retry-After, RetryInfo) that a retry waits for
MAX_RETRY_AFTER_SECONDS: Final = 60.0


def backoff_delay(attempt: int, initial: float, cap: float, rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number `attempt` (1 for the first) when the upstream named no time.

    Full jitter: uniform between 0 and the capped exponential, so that the runs one 429 or outage failed
    together spread their retries out instead of hitting the upstream again in lockstep.
    """
    exponent = min(max(attempt - 1, 0), 64)  # past the cap anyway; 2.0**1024 would overflow
    return (rng or _jitter).uniform(0.0, min(cap, initial * 2.0**exponent))


def retry_delay(exc: UpstreamError | None, attempt: int, initial: float, cap: float) -> float:
    """Seconds to wait before try number `attempt` + 1 after `exc` (None: no failure, a poll's wait): the
    wait the upstream named (Retry-After, RetryInfo), up to MAX_RETRY_AFTER_SECONDS, or else a backoff."""
    if exc is not None and exc.retry_after is not None:
        return min(exc.retry_after, MAX_RETRY_AFTER_SECONDS)
    return backoff_delay(attempt, initial, cap)
