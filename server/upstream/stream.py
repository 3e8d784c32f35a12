"""The skeleton every provider's stream decoder shares: body bytes -> SSE messages -> wire chunks -> events.

A provider's decoder says only what one of its chunks means (`on_chunk`) and how its stream ends
(`finished`). Reading the event stream, decoding each message straight into the provider's wire Struct, the
`[DONE]` sentinel and malformed input are handled here, once and alike for every provider.

Sans-I/O like `SSEDecoder`: bytes in, normalised events out; the backend owns the connection.
"""

from __future__ import annotations

import abc
from typing import Generic, Protocol, TypeVar

import msgspec

from .base import Finished, UpstreamError, UpstreamEvent
from .emit import StepSequencer
from .sse import SSEDecoder, SSEMessage

Chunk = TypeVar("Chunk")
Events = list[UpstreamEvent]


class StreamDecoder(Protocol):
    """A backend's sans-I/O stream decoder: raw body bytes in, normalised events out."""

    def feed_bytes(self, chunk: bytes) -> list[UpstreamEvent]: ...

    def close(self) -> list[UpstreamEvent]:
        """The body ended: the last events, ending in exactly one `Finished` (or an `UpstreamError`)."""
        ...


class JsonStreamDecoder(abc.ABC, Generic[Chunk]):
    """Server-sent events whose data is one JSON chunk each, decoded into `Chunk` by `chunks`."""

    #: what errors call one message of this stream
    unit = "chunk"

    def __init__(self, backend: str, chunks: msgspec.json.Decoder[Chunk]) -> None:
        self.backend = backend
        #: opens and closes the output steps around what the chunks carry
        self.steps = StepSequencer()
        #: the stream said `data: [DONE]` (OpenAI's end of stream; imitations of the others send it too)
        self.done = False
        self._sse = SSEDecoder()
        self._chunks = chunks
        #: an error met after output in the same read: raised on the next call, once that output is out
        self._failure: UpstreamError | None = None

    def feed_bytes(self, chunk: bytes) -> Events:
        self._raise_failure()
        return self._decode(self._sse.feed(chunk))

    def close(self) -> Events:
        self._raise_failure()
        events = self._decode(self._sse.close())
        self._raise_failure()
        events += self.steps.end()
        events.append(self.finished())
        return events

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def _decode(self, messages: list[SSEMessage]) -> Events:
        """The events of `messages`. One read can carry output and then an error (a provider's error event
        mid-answer): the output is returned first, and the error raised by the next call."""
        events: Events = []
        for message in messages:
            try:
                events += self._message(message)
            except UpstreamError as error:
                if not events:
                    raise
                self._failure = error
                break
        return events

    def _message(self, message: SSEMessage) -> Events:
        if message.data.strip() == "[DONE]":
            self.done = True
            return []
        try:
            chunk = self._chunks.decode(message.data)
        except msgspec.ValidationError as error:
            return self.on_invalid(message, error)
        except msgspec.DecodeError:
            raise self.malformed(message) from None
        return self.on_chunk(chunk)

    @abc.abstractmethod
    def on_chunk(self, chunk: Chunk) -> Events:
        """The events one chunk carries; raises `UpstreamError` for an error reported inside the stream."""

    @abc.abstractmethod
    def finished(self) -> Finished:
        """How the model ended, once the body has; raises `UpstreamError` if the stream was cut short."""

    def on_invalid(self, message: SSEMessage, error: msgspec.ValidationError) -> Events:
        """JSON that does not fit the chunk type. A value that is not an object carries nothing a provider
        sends us and is skipped; an object whose fields break the wire types is malformed."""
        if not isinstance(msgspec.json.decode(message.data), dict):
            return []
        raise self.malformed(message, str(error))

    def malformed(self, message: SSEMessage, detail: str = "") -> UpstreamError:
        why = f" ({detail})" if detail else ""
        return UpstreamError(self.backend, 0, f"malformed stream {self.unit}{why}: {message.data[:200]!r}")
