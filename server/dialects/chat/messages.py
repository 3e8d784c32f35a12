"""A request's `messages` as our steps: the conversation a stateless create replays.

    system, developer    -> system_instruction (their texts, in order, one paragraph each)
    user                 -> user_input: text, image_url (data: and http(s) URLs), input_audio, file (data)
    assistant            -> model_output (its text; a refusal is what the model said), then a
                            function_call per tool call (arguments: the JSON object the string holds)
    tool                 -> function_result of `tool_call_id` (its text); the call's name is filled in
                            from the call it answers (runner/history.py)

Refused with a 400 naming the field: a message `name` (no step carries a speaker's name), the deprecated
`function` role and `function_call`, assistant `audio`, a `file_id` (no Files API is served).
"""

from __future__ import annotations

import json
import mimetypes
from typing import Any

from ...errors import InvalidArgument
from ...protocol.content import AudioContent, Content, DocumentContent, ImageContent, TextContent
from ...protocol.steps import FunctionCallStep, FunctionResultStep, ModelOutputStep, Step, UserInputStep
from . import wire

#: an image_url's `detail` as Google's media `resolution` (`auto`: the provider's own choice)
_RESOLUTION = {"low": "low", "high": "high", "original": "ultra_high"}
_AUDIO_MIME = {"wav": "audio/wav", "mp3": "audio/mpeg"}


def steps_of(messages: list[wire.Message]) -> tuple[str | None, list[Step]]:
    """(system_instruction, the conversation's steps)."""
    system: list[str] = []
    steps: list[Step] = []
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        if isinstance(message, wire.FunctionMessage):
            raise InvalidArgument("The `function` role is deprecated: send `tool` messages", f"{path}.role")
        if getattr(message, "name", None) is not None:
            raise InvalidArgument("Participant names are not served", f"{path}.name")
        if isinstance(message, wire.SystemMessage | wire.DeveloperMessage):
            system.append(_text(message.content))
        elif isinstance(message, wire.UserMessage):
            steps.append(UserInputStep(content=_user_content(message.content, f"{path}.content")))
        elif isinstance(message, wire.AssistantMessage):
            steps += _assistant(message, path)
        else:
            steps.append(FunctionResultStep(call_id=message.tool_call_id, result=_text(message.content)))
    if not steps:
        raise InvalidArgument("At least one user, assistant or tool message is required", "messages")
    return ("\n\n".join(system) if system else None), steps


def _text(content: str | list[wire.TextPart]) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.text for part in content)


def _user_content(content: str | list[wire.UserPart], path: str) -> list[Content]:
    if isinstance(content, str):
        return [TextContent(text=content)]
    return [_part(part, f"{path}[{index}]") for index, part in enumerate(content)]


def _part(part: wire.UserPart, path: str) -> Content:
    if isinstance(part, wire.TextPart):
        return TextContent(text=part.text)
    if isinstance(part, wire.ImagePart):
        return image(part.image_url, f"{path}.image_url")
    if isinstance(part, wire.AudioPart):
        audio = part.input_audio
        return AudioContent(data=audio.data, mime_type=_AUDIO_MIME[audio.format])
    return _file(part.file, f"{path}.file")


def image(url: wire.ImageUrl, path: str) -> ImageContent:
    resolution = _RESOLUTION.get(url.detail or "auto")
    if url.url.startswith("data:"):
        mime, data = _data_url(url.url, f"{path}.url")
        return ImageContent(data=data, mime_type=mime, resolution=resolution)
    if not url.url.startswith(("http://", "https://")):
        raise InvalidArgument("Expected a data: URL or an http(s) URL", f"{path}.url")
    mime = mimetypes.guess_type(url.url.partition("?")[0])[0]
    return ImageContent(uri=url.url, mime_type=mime, resolution=resolution)


def _file(file: wire.FileData, path: str) -> DocumentContent:
    if file.file_id is not None:
        raise InvalidArgument(
            "Files by id are not served (no Files API): send `file_data`", f"{path}.file_id"
        )
    if not file.file_data:
        raise InvalidArgument("`file_data` is required", f"{path}.file_data")
    if file.file_data.startswith("data:"):
        mime, data = _data_url(file.file_data, f"{path}.file_data")
    else:
        guessed = mimetypes.guess_type(file.filename or "")[0]
        mime, data = guessed or "application/pdf", file.file_data
    return DocumentContent(data=data, mime_type=mime)


def _data_url(url: str, path: str) -> tuple[str | None, str]:
    """(mime type, base64 data) of a `data:<mime>;base64,<data>` URL."""
    header, comma, data = url.partition(",")
    if not comma or not header.endswith(";base64"):
        raise InvalidArgument("Expected a base64 data: URL (data:<type>;base64,<data>)", path)
    mime = header.removeprefix("data:").removesuffix(";base64").split(";")[0]
    return mime or None, data


def _assistant(message: wire.AssistantMessage, path: str) -> list[Step]:
    if message.audio is not None:
        raise InvalidArgument("Audio is not served", f"{path}.audio")
    if message.function_call is not None:
        raise InvalidArgument("`function_call` is deprecated: send `tool_calls`", f"{path}.function_call")
    steps: list[Step] = []
    text = _assistant_text(message)
    if text:
        steps.append(ModelOutputStep(content=[TextContent(text=text)]))
    for index, call in enumerate(message.tool_calls or ()):
        where = f"{path}.tool_calls[{index}].function.arguments"
        arguments = _arguments(call.function.arguments, where)
        steps.append(FunctionCallStep(id=call.id, name=call.function.name, arguments=arguments))
    return steps


def _assistant_text(message: wire.AssistantMessage) -> str:
    content = message.content
    if content is None:
        return message.refusal or ""
    if isinstance(content, str):
        return content
    return "".join(p.text if isinstance(p, wire.TextPart) else p.refusal for p in content)


def _arguments(raw: str, path: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        raise InvalidArgument("Expected a JSON object, as a string", path) from None
    if not isinstance(value, dict):
        raise InvalidArgument("Expected a JSON object, as a string", path)
    return value
