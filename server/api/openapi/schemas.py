"""The request and reply schemas, generated from the wire types."""

from __future__ import annotations

import typing

import msgspec

from ...protocol.base import OpenMember
from ...protocol.events import AnyEvent
from ...protocol.interaction import CreateRequest, Interaction
from ..errors import ErrorBody
from .common import OPEN_UNIONS, Json, ref, schema_hook

# ---------------------------------------------------------------------------------------------------------
# Schemas


def schemas() -> Json:
    members = [cls for union in OPEN_UNIONS for cls in union.known.values()]
    schemas, components = msgspec.json.schema_components(
        [CreateRequest, Interaction, ErrorBody, AnyEvent, *members],
        ref_template="#/components/schemas/{name}",
        schema_hook=schema_hook,
    )
    for union in OPEN_UNIONS:
        components[union.__name__] = open_union(union)
    components["Event"] = {
        **schemas[3],
        "title": "Event",
        "description": "One server-sent event; its `event_type` is also the SSE `event:` name",
    }
    components["Input"] = _INPUT
    components["Health"] = _HEALTH
    components["Readiness"] = _READINESS
    for schema in components.values():
        _drop_impossible_defaults(schema)
    create = components["CreateRequest"]
    create["description"] = (
        "The body of a create. Give exactly one of `model` and `agent`; `input` is required."
    )
    create["properties"]["input"] = ref("Input")
    create["required"] = sorted({*create.get("required", ()), "input"})
    create["oneOf"] = _MODEL_OR_AGENT
    _describe_replies(components)
    return components


# service._route: exactly one of them, an empty or null one counting as not given
_MODEL_OR_AGENT = [
    {"required": [name], "properties": {name: {"type": "string", "minLength": 1}}}
    for name in ("model", "agent")
]


def _describe_replies(components: Json) -> None:
    """What the server always sends, marked required. The wire types leave these fields optional (they
    are optional in requests, or filled in by the server), and omit_defaults drops only a None."""
    interaction = components["Interaction"]
    interaction["properties"]["input"] = {
        **ref("Input"),
        "description": "This turn's input as it was sent; returned by get with `include_input=true`",
    }
    # views.interaction and the streams' first snapshot set both times and the model or agent it ran on;
    # `id` is not always there: a `store: false` create has none
    interaction["required"] = sorted({*interaction["required"], "created", "updated"})
    interaction["oneOf"] = _MODEL_OR_AGENT
    interaction["properties"]["steps"] = {"type": "array", "items": ref("ReplyStep")}
    components["StepStart"]["properties"]["step"] = ref("ReplyStep")
    components["StoredInteraction"] = _STORED_INTERACTION
    components["ReplyStep"] = _REPLY_STEP
    components["ServerSentEvent"] = _server_sent_event()


_STORED_INTERACTION: Json = {
    "title": "StoredInteraction",
    "description": "An interaction read from the store (get, cancel): it always has its `id`, and its "
    "`steps` (the whole timeline, input steps first)",
    "allOf": [ref("Interaction")],
    "required": ["id", "steps"],
}
# steps.py: `content` and `arguments` become [] and {} when a client leaves them out, so that strict
# clients always find them in what the server sends
_REPLY_STEP: Json = {
    "title": "ReplyStep",
    "description": "A step as the server sends it: every `user_input` and `model_output` step has its "
    "`content`, and every `function_call` its `arguments`",
    "allOf": [
        ref("Step"),
        {
            "if": {"properties": {"type": {"enum": ["user_input", "model_output"]}}, "required": ["type"]},
            "then": {"required": ["content"]},
        },
        {
            "if": {"properties": {"type": {"const": "function_call"}}, "required": ["type"]},
            "then": {"required": ["arguments"]},
        },
    ],
}


def _server_sent_event() -> Json:
    """One event of a `text/event-stream` answer, as its SSE fields. OpenAPI 3.1 has no word for the
    items of a stream (3.2 adds `itemSchema`), and tools that check streams (schemathesis) read a stream's
    `schema` as one event's fields, as 3.2 does: so that is what it describes, the Event being `data`."""
    names = sorted(str(member.__struct_config__.tag) for member in typing.get_args(AnyEvent))
    return {
        "title": "ServerSentEvent",
        "description": "One event of a stream: an `event:` line with its `event_type` and a `data:` line "
        "with the Event as JSON. `: keep-alive` comment lines come between events while waiting.",
        "type": "object",
        "properties": {
            "event": {"enum": names, "description": "The `event_type` of its data"},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": ref("Event"),
            },
        },
        "required": ["event", "data"],
    }


def open_union(union: type[OpenMember]) -> Json:
    """Known members by their `type`; any other `type` is accepted too and kept as sent."""
    mapping = {tag: f"#/components/schemas/{cls.__name__}" for tag, cls in union.known.items()}
    unknown = {
        "type": "object",
        "description": f"A {union.union_name} of another type: accepted, stored and returned as sent",
        "properties": {"type": {"type": "string"}},
        "required": ["type"],
    }
    return {
        "title": union.__name__,
        "anyOf": [*({"$ref": ref} for ref in mapping.values()), unknown],
        "discriminator": {"propertyName": "type", "mapping": mapping},
    }


def _admits_null(schema: Json) -> bool:
    if "$ref" in schema:
        return False  # every component is an object or a union of objects
    if not schema.keys() - {"title", "description", "default", "examples"}:
        return True  # `{}`: any JSON value
    kinds = schema.get("type")
    if kinds == "null" or (isinstance(kinds, list) and "null" in kinds):
        return True
    if "enum" in schema:
        return None in schema["enum"]
    return any(_admits_null(member) for member in [*schema.get("anyOf", ()), *schema.get("oneOf", ())])


def _drop_impossible_defaults(schema: Json) -> None:
    """msgspec writes `default: null` for every field that defaults to None. Where null is not a valid
    value (`content` of user_input and model_output steps: absent means empty, null is refused), the
    field is simply optional: say nothing rather than a default no client may send."""
    for prop in schema.get("properties", {}).values():
        if "default" in prop and prop["default"] is None and not _admits_null(prop):
            del prop["default"]


# Everything normalize_input() accepts (codec.py); an empty string or list is refused like a missing one.
_INPUT: Json = {
    "title": "Input",
    "description": "This turn's input. Strings and contents become one `user_input` step; steps are taken "
    "as they are (the stateless multi-turn form, or function results).",
    "anyOf": [
        {"type": "string", "minLength": 1, "description": "Text from the user"},
        {**ref("Content"), "description": "One content block from the user"},
        {
            "type": "array",
            "minItems": 1,
            "items": ref("Content"),
            "description": "Content blocks from the user",
        },
        {**ref("Step"), "description": "One step"},
        {"type": "array", "minItems": 1, "items": ref("Step"), "description": "Steps"},
    ],
}
_HEALTH: Json = {
    "title": "Health",
    "type": "object",
    "properties": {"status": {"const": "ok"}},
    "required": ["status"],
}
_READINESS: Json = {
    "title": "Readiness",
    "type": "object",
    "properties": {
        "status": {"type": "string", "description": "`ready`, or `not ready`"},
        "reason": {"type": "string", "description": "What is missing (only when not ready)"},
    },
    "required": ["status"],
    "examples": [{"status": "ready"}],
}
