"""A turn Google runs as a background interaction of its own (an agent's): created once, then followed.

The create asks for `background: true, store: true, stream: true` (Google runs agents only in the
background, and keeps background interactions stored). Its first event names the remote interaction, and
`RemoteStarted` goes out before anything else, for the runner to record; from then on the run is followed,
never made again. A stream cut short (a dropped connection, a read timeout, its end before
`interaction.completed`) is taken up with `GET .../interactions/{id}?stream=true&last_event_id=<the last
event read>` after a backoff, or the wait the upstream named (a 429's Retry-After or RetryInfo), so nothing
is read twice; a re-run after a lost worker (`remote_id` given) follows it from its start. Where a stream
cannot be had (the GET is refused), the interaction is polled, with a backoff (or the wait named), until it
ends, and what was not streamed of it is shown: the rest of the text of a step the cut stream left open,
then the steps not streamed yet, whole.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Final

import msgspec

from ...protocol import status as st
from ...protocol.base import dec_hook
from ...protocol.interaction import Interaction
from ..base import RemoteStarted, UpstreamError, UpstreamEvent, UpstreamRequest, retry_delay
from .decode import InteractionsDecoder

if TYPE_CHECKING:
    from .backend import InteractionsBackend

#: how many times in a row a cut stream is taken up before the run fails (about a minute of backoff)
FOLLOW_ATTEMPTS: Final = 10
_FOLLOW_BACKOFF: Final = (0.25, 8.0)
_POLL_BACKOFF: Final = (1.0, 30.0)
#: a GET with `stream=true` refused so: the stream is not to be had, the interaction is polled instead
_NO_STREAM: Final = frozenset({400, 405, 406, 415, 501})
_RUNNING: Final = frozenset({st.QUEUED, st.IN_PROGRESS})
_interaction = msgspec.json.Decoder(Interaction, dec_hook=dec_hook)


async def run(backend: InteractionsBackend, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
    decoder = InteractionsDecoder(backend.name, remote=True)
    remote_id = request.remote_id
    chunks = backend.follow(remote_id, None) if remote_id else backend.create_remote(request)
    failures = 0
    while True:
        try:
            async with contextlib.aclosing(chunks):
                async for chunk in chunks:
                    events = decoder.feed_bytes(chunk)
                    if remote_id is None and decoder.remote_id is not None:
                        remote_id = decoder.remote_id
                        yield RemoteStarted(remote_id=remote_id)
                    for event in events:
                        failures = 0
                        yield event
            for event in decoder.close():
                yield event
            return
        except UpstreamError as exc:
            if remote_id is None or decoder.ended:
                raise  # nothing to follow (the create failed), or the remote interaction has ended
            if exc.status in _NO_STREAM:
                for event in await _polled(backend, remote_id, decoder):
                    yield event
                return
            failures += 1
            if not exc.retryable or failures > FOLLOW_ATTEMPTS:
                raise
            await asyncio.sleep(retry_delay(exc, failures, *_FOLLOW_BACKOFF))
            decoder.reconnected()
            chunks = backend.follow(remote_id, decoder.last_event_id)


async def _polled(
    backend: InteractionsBackend, remote_id: str, decoder: InteractionsDecoder
) -> list[UpstreamEvent]:
    """Read the remote interaction until it has ended (a failed read is tried again: a poll waits anyway),
    within the route's deadline; its output not streamed yet, whole."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + backend.route.deadline_seconds
    attempt = 0
    while True:
        failed: UpstreamError | None = None
        try:
            raw = await backend.read_remote(remote_id)
        except UpstreamError as exc:
            if not exc.retryable:
                raise
            failed = exc
        else:
            interaction = _decoded(backend.name, raw)
            if interaction.status not in _RUNNING:
                return decoder.whole(interaction)
        attempt += 1
        wait = retry_delay(failed, attempt, *_POLL_BACKOFF)
        if loop.time() + wait > deadline:
            raise UpstreamError(backend.name, 0, f"{remote_id} had not ended by the deadline", timeout=True)
        await asyncio.sleep(wait)


def _decoded(backend: str, raw: bytes) -> Interaction:
    try:
        return _interaction.decode(raw)
    except msgspec.DecodeError as exc:
        raise UpstreamError(backend, 0, f"a malformed interaction ({exc}): {raw[:200]!r}") from None
