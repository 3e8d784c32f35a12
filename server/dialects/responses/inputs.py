"""A create body's `input` (a string or a list of items) as our input steps, pure.

    message, role user               -> a user_input step (input_text, input_image, input_file, input_audio)
    message, role assistant          -> a model_output step (its output_text parts; refusals as text)
    message, role system / developer -> the turn's system instruction, after `instructions`, in order (our
                                        upstreams take one system text: where such a message stood in the
                                        list is not kept)
    function_call                    -> a function_call step (its `call_id` is the step's id)
    function_call_output             -> a function_result step
    reasoning                        -> a thought step (`encrypted_content` is its signature)
    mcp_call                         -> an mcp_server_tool_call step and, with an output, its result

Images are `data:` URLs (kept inline) or http(s) URLs (passed on by URL); files the same by `file_data` or
`file_url`. A `file_id` names OpenAI's Files API, not served: a 400. Item ids and statuses sent back by a
client are OpenAI's bookkeeping: an item's id here is derived from its interaction's (items.py).
"""

from __future__ import annotations

import mimetypes
from typing import Any, Final

import msgspec

from ...errors import InvalidArgument
from ...protocol.content import AudioContent, Content, DocumentContent, ImageContent, TextContent
from ...protocol.steps import (
    FunctionCallStep,
    FunctionResultStep,
    McpServerToolCallStep,
    McpServerToolResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
    UserInputStep,
)

_json = msgspec.json.Decoder()

#: OpenAI's image `detail` -> our image `resolution`
_DETAILS: Final = {"auto": None, "low": "low", "high": "high"}
_AUDIO: Final = {"wav": "audio/wav", "mp3": "audio/mp3"}


class Inputs(msgspec.Struct):
    steps: list[Step]
    #: the texts of the system and developer messages, in order
    system: list[str]


def decode_input(raw: Any) -> Inputs:
    if isinstance(raw, str):
        return Inputs([UserInputStep(content=[TextContent(text=raw)])] if raw else [], [])
    if not isinstance(raw, list):
        raise InvalidArgument("Expected a string or a list of input items", "input")
    found = Inputs([], [])
    for index, item in enumerate(raw):
        _item(item, f"input[{index}]", found)
    return found


def _item(item: Any, field: str, found: Inputs) -> None:
    if not isinstance(item, dict):
        raise InvalidArgument("Expected an input item (an object)", field)
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        _message(item, field, found)
    elif kind == "function_call":
        found.steps.append(function_call(item, field))
    elif kind == "function_call_output":
        call_id = _string(item, "call_id", field)
        found.steps.append(FunctionResultStep(call_id=call_id, result=_output(item.get("output"), field)))
    elif kind == "reasoning":
        found.steps.append(_reasoning(item, field))
    elif kind == "mcp_call":
        found.steps.extend(_mcp_call(item, field))
    elif kind == "item_reference":
        raise InvalidArgument(
            "Item references are not served: send the item itself, or continue with previous_response_id",
            f"{field}.type",
        )
    elif isinstance(kind, str):
        raise InvalidArgument(f"Input items of type {kind!r} are not served", f"{field}.type")
    else:
        raise InvalidArgument("Expected an input item with a `type` (or a message with a `role`)", field)


def _message(item: dict[str, Any], field: str, found: Inputs) -> None:
    role = item.get("role")
    content = item.get("content")
    if role == "user":
        found.steps.append(UserInputStep(content=_parts(content, f"{field}.content")))
    elif role == "assistant":
        found.steps.append(ModelOutputStep(content=_assistant_parts(content, f"{field}.content")))
    elif role in ("system", "developer"):
        found.system.append(_text_only(content, f"{field}.content"))
    else:
        raise InvalidArgument("Expected `role` user, assistant, system or developer", f"{field}.role")


def _parts(content: Any, field: str) -> list[Content]:
    if isinstance(content, str):
        return [TextContent(text=content)]
    if not isinstance(content, list):
        raise InvalidArgument("Expected a string or a list of content parts", field)
    return [_part(part, f"{field}[{index}]") for index, part in enumerate(content)]


def _part(part: Any, field: str) -> Content:
    if not isinstance(part, dict):
        raise InvalidArgument("Expected a content part (an object)", field)
    kind = part.get("type")
    if kind in ("input_text", "output_text"):
        return TextContent(text=_string(part, "text", field))
    if kind == "input_image":
        return _image(part, field)
    if kind == "input_file":
        return _file(part, field)
    if kind == "input_audio":
        return _audio(part, field)
    raise InvalidArgument(f"Content parts of type {kind!r} are not served", f"{field}.type")


def _image(part: dict[str, Any], field: str) -> ImageContent:
    _no_file_id(part, field)
    detail = part.get("detail", "auto")
    if detail not in _DETAILS:
        raise InvalidArgument("Expected `detail` auto, low or high", f"{field}.detail")
    url = _string(part, "image_url", field)
    mime, data = _data_url(url, f"{field}.image_url")
    if data is not None:
        return ImageContent(data=data, mime_type=mime, resolution=_DETAILS[detail])
    _web_url(url, f"{field}.image_url")
    return ImageContent(uri=url, mime_type=mimetypes.guess_type(url)[0], resolution=_DETAILS[detail])


def _file(part: dict[str, Any], field: str) -> DocumentContent:
    _no_file_id(part, field)
    filename = part.get("filename")
    guessed = mimetypes.guess_type(filename)[0] if isinstance(filename, str) else None
    if part.get("file_data") is not None:
        raw = _string(part, "file_data", field)
        mime, data = _data_url(raw, f"{field}.file_data")
        # a bare base64 string is OpenAI's other form: its type is the file name's
        return DocumentContent(data=data or raw, mime_type=mime or guessed or "application/pdf")
    url = _string(part, "file_url", field)
    _web_url(url, f"{field}.file_url")
    return DocumentContent(uri=url, mime_type=guessed or mimetypes.guess_type(url)[0])


def _audio(part: dict[str, Any], field: str) -> AudioContent:
    audio = part.get("input_audio")
    if not isinstance(audio, dict):
        raise InvalidArgument("Expected an object with `data` and `format`", f"{field}.input_audio")
    mime = _AUDIO.get(str(audio.get("format")))
    if mime is None:
        raise InvalidArgument("Expected `format` wav or mp3", f"{field}.input_audio.format")
    return AudioContent(data=_string(audio, "data", f"{field}.input_audio"), mime_type=mime)


def _no_file_id(part: dict[str, Any], field: str) -> None:
    if part.get("file_id") is not None:
        raise InvalidArgument("OpenAI's Files API is not served: send the data or a URL", f"{field}.file_id")


def _data_url(url: str, field: str) -> tuple[str | None, str | None]:
    """(mime type, base64 data) of a `data:<mime>;base64,<data>` URL; (None, None) for any other text."""
    if not url.startswith("data:"):
        return None, None
    header, comma, data = url[5:].partition(",")
    mime, _, encoding = header.partition(";")
    if not comma or encoding != "base64" or not data:
        raise InvalidArgument("Expected a data URL of the form data:<type>;base64,<data>", field)
    return mime or None, data


def _web_url(url: str, field: str) -> None:
    if not url.startswith(("http://", "https://")):
        raise InvalidArgument("Expected a data: URL or an http(s) URL", field)


def _assistant_parts(content: Any, field: str) -> list[Content]:
    if isinstance(content, str):
        return [TextContent(text=content)]
    if not isinstance(content, list):
        raise InvalidArgument("Expected a string or a list of output_text parts", field)
    parts: list[Content] = []
    for index, part in enumerate(content):
        where = f"{field}[{index}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("output_text", "input_text"):
            parts.append(TextContent(text=_string(part, "text", where)))
        elif kind == "refusal":
            parts.append(TextContent(text=_string(part, "refusal", where)))
        else:
            raise InvalidArgument("Expected an output_text or refusal part", f"{where}.type")
    return parts


def _text_only(content: Any, field: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InvalidArgument("Expected a string or a list of input_text parts", field)
    texts: list[str] = []
    for index, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") != "input_text":
            raise InvalidArgument("A system or developer message holds text only", f"{field}[{index}]")
        texts.append(_string(part, "text", f"{field}[{index}]"))
    return "".join(texts)


def function_call(item: dict[str, Any], field: str) -> FunctionCallStep:
    return FunctionCallStep(
        id=_string(item, "call_id", field),
        name=_string(item, "name", field),
        arguments=arguments(item.get("arguments"), f"{field}.arguments"),
    )


def arguments(raw: Any, field: str) -> dict[str, Any]:
    """A call's `arguments`, OpenAI's JSON text of an object (an empty text is no arguments)."""
    if not isinstance(raw, str):
        raise InvalidArgument("Expected the arguments as a JSON text", field)
    if not raw.strip():
        return {}
    try:
        value = _json.decode(raw)
    except msgspec.DecodeError:
        raise InvalidArgument("Expected the arguments as a JSON text of an object", field) from None
    if not isinstance(value, dict):
        raise InvalidArgument("Expected the arguments as a JSON text of an object", field)
    return value


def _output(raw: Any, field: str) -> Any:
    """A function's output: a string as it is; a list of parts as our content items (as builtins)."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        return msgspec.to_builtins(_parts(raw, f"{field}.output"))
    raise InvalidArgument("Expected a string or a list of content parts", f"{field}.output")


def _reasoning(item: dict[str, Any], field: str) -> ThoughtStep:
    summary = item.get("summary") or []
    if not isinstance(summary, list):
        raise InvalidArgument("Expected a list of summary_text parts", f"{field}.summary")
    texts: list[Content] = [
        TextContent(text=_string(part, "text", f"{field}.summary[{i}]")) for i, part in enumerate(summary)
    ]
    signature = item.get("encrypted_content")
    if signature is not None and not isinstance(signature, str):
        raise InvalidArgument("Expected a string", f"{field}.encrypted_content")
    return ThoughtStep(signature=signature, summary=texts)


def _mcp_call(item: dict[str, Any], field: str) -> list[Step]:
    call_id = item.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise InvalidArgument("Expected the call's id", f"{field}.id")
    server = _string(item, "server_label", field)
    name = _string(item, "name", field)
    steps: list[Step] = [
        McpServerToolCallStep(
            id=call_id,
            name=name,
            server_name=server,
            arguments=arguments(item.get("arguments"), f"{field}.arguments"),
        )
    ]
    if item.get("output") is not None or item.get("error") is not None:
        result = item.get("output") if item.get("output") is not None else item.get("error")
        steps.append(McpServerToolResultStep(call_id=call_id, result=result, name=name, server_name=server))
    return steps


def _string(item: Any, key: str, field: str) -> str:
    value = item.get(key) if isinstance(item, dict) else None
    if not isinstance(value, str):
        raise InvalidArgument(f"Expected a string `{key}`", f"{field}.{key}")
    return value
