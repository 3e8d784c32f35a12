"""Gemini's `contents` (and `systemInstruction`) as our input steps: the reverse of upstream/gemini/
contents.py, for the generateContent dialect.

    user turn:  text                  -> user_input text
                inlineData / fileData -> user_input image, audio, video or document (by MIME type)
                functionResponse      -> function_result of the model turn's call of that name (in order)
    model turn: text                  -> model_output text (consecutive texts one step)
                text with thought     -> thought (its summary; its signature)
                functionCall          -> function_call (its id, or `call_<turn>_<n>` when it has none:
                                         the Developer API sends none, and pairs by name and order)
                thoughtSignature on   -> a thought holding only the signature, before the part's step
                any other part           (as the Gemini backend reads it: the history gives it back there)

Signatures are taken as they come: a client replays what we answered (our sealed signatures, opaque to
it). Code execution parts, and parts of none of these kinds, are a 400 naming the part.
"""

from __future__ import annotations

from typing import Any

from ...errors import InvalidArgument
from ...protocol.content import (
    AudioContent,
    Content,
    DocumentContent,
    ImageContent,
    TextContent,
    VideoContent,
    text_of,
)
from ...protocol.steps import (
    FunctionCallStep,
    FunctionResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
    UserInputStep,
)
from . import wire

_MEDIA: dict[str, type[ImageContent | AudioContent | VideoContent]] = {
    "image": ImageContent,
    "audio": AudioContent,
    "video": VideoContent,
}


def system_text(content: wire.Content | None) -> str | None:
    """`systemInstruction` as our system instruction: its texts, a paragraph each."""
    if content is None:
        return None
    texts = []
    for index, part in enumerate(content.parts):
        if part.text is None:
            raise InvalidArgument("Only text parts are allowed here", f"systemInstruction.parts[{index}]")
        texts.append(part.text)
    return "\n\n".join(text for text in texts if text) or None


def steps_of(contents: list[wire.Content]) -> list[Step]:
    """Each turn's parts as steps, in order."""
    steps: list[Step] = []
    calls: list[FunctionCallStep] = []  # the last model turn's calls, answered in order
    for turn_index, turn in enumerate(contents):
        where = f"contents[{turn_index}]"
        if turn.role not in (None, "user", "model", "function"):
            raise InvalidArgument("Expected `user` or `model`", f"{where}.role")
        if not turn.parts:
            raise InvalidArgument("A turn needs at least one part", f"{where}.parts")
        if turn.role == "model":
            calls = _model_turn(turn, turn_index, steps)
        else:
            _user_turn(turn, where, steps, calls)
    return steps


def _user_turn(turn: wire.Content, where: str, steps: list[Step], calls: list[FunctionCallStep]) -> None:
    content: list[Content] = []
    for index, part in enumerate(turn.parts):
        field = f"{where}.parts[{index}]"
        if part.function_response is not None:
            steps.append(_result(part.function_response, calls, field))
            continue
        item = _content(part, field)
        if item is not None:
            content.append(item)
    if content:
        steps.append(UserInputStep(content=content))


def _model_turn(turn: wire.Content, turn_index: int, steps: list[Step]) -> list[FunctionCallStep]:
    calls: list[FunctionCallStep] = []
    for index, part in enumerate(turn.parts):
        field = f"contents[{turn_index}].parts[{index}]"
        if part.thought and part.text is not None:
            summary: list[Content] | None = [TextContent(text=part.text)] if part.text else None
            steps.append(ThoughtStep(signature=part.thought_signature, summary=summary))
            continue
        if part.thought_signature:
            steps.append(ThoughtStep(signature=part.thought_signature))
        if part.function_call is not None:
            call = part.function_call
            if not call.name:
                raise InvalidArgument("A function call needs its `name`", f"{field}.functionCall.name")
            call_id = call.id or f"call_{turn_index}_{len(calls)}"
            step = FunctionCallStep(id=call_id, name=call.name, arguments=dict(call.args or {}))
            steps.append(step)
            calls.append(step)
        elif part.text is not None:
            if part.text:
                _append_text(steps, part.text)
        else:
            raise InvalidArgument("A model turn's part is text, a thought or a function call", field)
    return calls


def _append_text(steps: list[Step], text: str) -> None:
    last = steps[-1] if steps else None
    if isinstance(last, ModelOutputStep):
        last.content = [TextContent(text=text_of(last.content) + text)]
    else:
        steps.append(ModelOutputStep(content=[TextContent(text=text)]))


def _result(response: wire.FunctionResponse, calls: list[FunctionCallStep], field: str) -> FunctionResultStep:
    """The result of the model turn's call with this id, else of its first call with this name that has
    none yet."""
    match = next((call for call in calls if response.id and call.id == response.id), None) or next(
        (call for call in calls if call.name == response.name), None
    )
    if match is None:
        message = f"No function call named {response.name!r} in the model's turn before it"
        raise InvalidArgument(message, f"{field}.functionResponse.name")
    calls.remove(match)
    value: Any = response.response
    error = isinstance(value, dict) and set(value) == {"error"}
    result = value["error"] if error else value
    return FunctionResultStep(call_id=match.id, name=response.name, result=result, is_error=error or None)


def _content(part: wire.Part, field: str) -> Content | None:
    if part.text is not None:
        return TextContent(text=part.text) if part.text else None
    blob = part.inline_data
    if blob is not None:
        if not blob.data or not blob.mime_type:
            raise InvalidArgument("Inline data needs `mimeType` and `data`", f"{field}.inlineData")
        return _media(blob.mime_type, data=blob.data)
    if part.file_data is not None:
        return _media(part.file_data.mime_type, uri=part.file_data.file_uri)
    raise InvalidArgument("A user turn's part is text, inline data, file data or a function response", field)


def _media(mime_type: str, *, data: str | None = None, uri: str | None = None) -> Content:
    kind = _MEDIA.get(mime_type.partition("/")[0])
    if kind is None:
        return DocumentContent(data=data, uri=uri, mime_type=mime_type)
    return kind(data=data, uri=uri, mime_type=mime_type)
