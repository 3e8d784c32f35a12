"""`GenerateContentResponse` chunks -> normalised events.

Each chunk carries the next parts of the first candidate, and possibly its finish reason and the usage so
far. A signature on a thought part stays in that thought step; one on any other part becomes a
signature-only thought step right before that part's step (after it, for text), so that replaying the
history puts it back on the part that carried it.
"""

from __future__ import annotations

import msgspec

from ...dialects.generate import wire
from ...protocol.deltas import ImageDelta
from ...protocol.interaction import ErrorInfo, ModalityTokens, Usage
from ...protocol.steps import CodeExecutionCallStep, CodeExecutionResultStep
from .. import native
from ..base import Finished, UpstreamError, UsageReported
from ..emit import to_json
from ..stream import Events, JsonStreamDecoder
from .kind import KIND

_BLOCKED = {
    "SAFETY": "the response was blocked by Gemini's safety filters",
    "IMAGE_SAFETY": "the generated image was blocked by Gemini's safety filters",
    "RECITATION": "the response was blocked because it recites training data",
    "IMAGE_RECITATION": "the generated image was blocked because it recites training data",
    "BLOCKLIST": "the response contains terms from the blocklist",
    "PROHIBITED_CONTENT": "the response was blocked for prohibited content",
    "IMAGE_PROHIBITED_CONTENT": "the generated image was blocked for prohibited content",
    "SPII": "the response was blocked because it may contain sensitive personal information",
    "LANGUAGE": "the response is in an unsupported language",
}
_chunks = msgspec.json.Decoder(wire.GenerateContentResponse)


class GeminiDecoder(JsonStreamDecoder[wire.GenerateContentResponse]):
    """There is no `[DONE]`: the stream ends when the body does, after a chunk with a finish reason."""

    def __init__(self, backend: str = KIND) -> None:
        super().__init__(backend, _chunks)
        self._finish: str | None = None
        self._finish_message: str | None = None
        self._blocked: str | None = None
        self._usage: Usage | None = None
        self._code_call_id: str | None = None

    def on_chunk(self, chunk: wire.GenerateContentResponse) -> Events:
        if chunk.error is not None:
            error = chunk.error
            status = error.code if error.code is not None else 500
            raise UpstreamError(self.backend, status, error.message or error.status or "no message")
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason:
            self._blocked = feedback.block_reason
        events: Events = []
        if chunk.candidates:
            candidate = chunk.candidates[0]
            if candidate.content is not None:
                for part in candidate.content.parts:
                    events += self._part(part)
            if candidate.finish_reason:
                self._finish = candidate.finish_reason
                self._finish_message = candidate.finish_message
        if chunk.usage_metadata is not None:
            usage = map_usage(chunk.usage_metadata)
            if usage != self._usage:
                self._usage = usage
                events.append(UsageReported(usage=usage))
        return events

    def _part(self, part: wire.Part) -> Events:
        signature = native.wrap(self.backend, part.thought_signature) if part.thought_signature else None
        steps = self.steps
        if part.thought:
            return steps.thought(summary=part.text, signature=signature)
        before = steps.thought(signature=signature, new=True) if signature else []
        if part.function_call is not None:
            call = part.function_call
            arguments = to_json(call.args if call.args is not None else {})
            return before + steps.function_call(call.id or native.new_call_id(), call.name, arguments)
        if part.executable_code is not None:
            return before + self._code(part.executable_code, signature)
        if part.code_execution_result is not None:
            return before + self._code_result(part.code_execution_result, signature)
        if part.inline_data is not None:
            image = ImageDelta(data=part.inline_data.data, mime_type=part.inline_data.mime_type)
            return steps.media(image) + before
        # text, or an empty part that only carries a signature: the signature goes after the text
        return steps.text(part.text or "") + before

    def _code(self, code: wire.ExecutableCode, signature: str | None) -> Events:
        self._code_call_id = native.new_call_id()
        arguments = {"code": code.code, "language": code.language.lower()}
        return self.steps.whole(
            CodeExecutionCallStep(id=self._code_call_id, arguments=arguments, signature=signature)
        )

    def _code_result(self, result: wire.CodeExecutionResult, signature: str | None) -> Events:
        step = CodeExecutionResultStep(
            call_id=self._code_call_id or native.new_call_id(),
            result=result.output,
            is_error=result.outcome not in (None, "OUTCOME_OK"),
            signature=signature,
        )
        return self.steps.whole(step)

    def finished(self) -> Finished:
        reason = self._finish
        if reason is None and self._blocked:
            message = f"The prompt was blocked by Gemini ({self._blocked})"
            return Finished(status="failed", error=ErrorInfo(code="content_blocked", message=message))
        if reason is None:
            raise UpstreamError(self.backend, 0, "the stream ended before the model finished")
        if reason == "MAX_TOKENS":
            return Finished(status="incomplete")
        if reason == "STOP":
            return Finished(status="requires_action" if self.steps.calls else "completed")
        if reason in _BLOCKED:
            message = f"Gemini stopped: {_BLOCKED[reason]} (finishReason {reason})"
            return Finished(status="failed", error=ErrorInfo(code="content_blocked", message=message))
        detail = f": {self._finish_message}" if self._finish_message else ""
        message = f"Gemini stopped with finishReason {reason}{detail}"
        return Finished(status="failed", error=ErrorInfo(code="upstream_error", message=message))


def map_usage(meta: wire.UsageMetadata) -> Usage:
    return Usage(
        total_input_tokens=meta.prompt_token_count,
        total_output_tokens=meta.candidates_token_count,
        total_thought_tokens=meta.thoughts_token_count,
        total_cached_tokens=meta.cached_content_token_count,
        total_tool_use_tokens=meta.tool_use_prompt_token_count,
        total_tokens=meta.total_token_count,
        input_tokens_by_modality=_by_modality(meta.prompt_tokens_details),
        output_tokens_by_modality=_by_modality(meta.candidates_tokens_details),
        cached_tokens_by_modality=_by_modality(meta.cache_tokens_details),
    )


def _by_modality(counts: list[wire.ModalityTokenCount] | None) -> list[ModalityTokens] | None:
    if not counts:
        return None
    return [ModalityTokens(modality=c.modality.lower(), tokens=c.token_count) for c in counts]
