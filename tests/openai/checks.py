"""What the OpenAI dialects' tests check every body against: the Open Responses specification's published
models (`openresponses-types`), besides the openai SDK's own parsing."""

from __future__ import annotations

import json
from typing import Any

from openai import OpenAI
from openai.types.responses import Response
from openresponses_types.types import ResponseResource


def valid(body: str | bytes) -> dict[str, Any]:
    """The Response body, checked against the Open Responses model of a Response.

    One exception: the model's `text.format` of type json_schema declares its `schema` as null only (a
    generator's slip in openresponses-types 2.4.0: the published OpenAPI document types it as an object),
    so a json_schema format is checked apart, its schema an object."""
    value: dict[str, Any] = json.loads(body)
    fmt = value.get("text", {}).get("format", {})
    checked = value
    if fmt.get("type") == "json_schema":
        assert isinstance(fmt.get("schema"), dict), fmt
        checked = {**value, "text": {**value["text"], "format": {**fmt, "schema": None}}}
    ResponseResource.model_validate(checked)
    return value


def create(client: OpenAI, **params: Any) -> Response:
    """`client.responses.create(**params)`, its body validated."""
    raw = client.responses.with_raw_response.create(**params)
    valid(raw.http_response.content)
    response: Response = raw.parse()
    return response


def retrieve(client: OpenAI, response_id: str) -> Response:
    raw = client.responses.with_raw_response.retrieve(response_id)
    valid(raw.http_response.content)
    response: Response = raw.parse()
    return response
