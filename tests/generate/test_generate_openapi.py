"""generateContent's three methods in the OpenAPI document: described on both prefixes, valid, and the
server's real replies (a turn, its stream in both framings, a count, an error) match their schemas."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema  # type: ignore[import-untyped]  # no stubs in the environment
from openapi_spec_validator import validate

VERTEX = "/{version}/projects/{project}/locations/{location}"
METHODS = {
    "generateContent": "GenerateContent",
    "streamGenerateContent": "StreamGenerateContent",
    "countTokens": "CountTokens",
}


def _checker(document: dict[str, Any], name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({**document, "$ref": f"#/components/schemas/{name}"})


def test_the_methods_are_described_and_their_replies_match(base_url: str, api_key: str) -> None:
    document: dict[str, Any] = httpx.get(f"{base_url}/openapi.json").json()
    validate(document)
    for prefix, suffix in (("/{version}", ""), (VERTEX, "Vertex")):
        for method, name in METHODS.items():
            item = document["paths"][f"{prefix}/models/{{model}}:{method}"]
            assert item["post"]["operationId"] == name + suffix
            assert {p["name"] for p in item["parameters"]} >= {"version", "model"}
            assert [p["name"] for p in item["post"]["parameters"]] == ["alt"]
    headers = {"x-goog-api-key": api_key}
    body = {"contents": [{"role": "user", "parts": [{"text": "one two three"}]}]}
    url = f"{base_url}/v1beta/models/echo"
    turn = httpx.post(f"{url}:generateContent", json=body, headers=headers, timeout=30)
    counted = httpx.post(f"{url}:countTokens", json=body, headers=headers, timeout=30)
    array = httpx.post(f"{url}:streamGenerateContent", json=body, headers=headers, timeout=30)
    sse = httpx.post(f"{url}:streamGenerateContent?alt=sse", json=body, headers=headers, timeout=30)
    refused = httpx.post(f"{url}:generateContent?alt=proto", json=body, headers=headers, timeout=30)
    chunk = _checker(document, "GeminiGenerateContentResponse")
    assert chunk.is_valid(turn.json()), turn.text
    assert _checker(document, "GeminiCountTokensResponse").is_valid(counted.json()), counted.text
    assert len(array.json()) >= 3 and all(chunk.is_valid(each) for each in array.json()), array.text
    events = [block for block in sse.text.split("\r\n\r\n") if block]
    assert len(events) >= 3
    for block in events:
        fields = dict(line.split(": ", 1) for line in block.split("\r\n"))
        assert _checker(document, "GeminiChunkEvent").is_valid(fields), block
        assert chunk.is_valid(json.loads(fields["data"])), block
    assert refused.status_code == 400 and _checker(document, "ErrorBody").is_valid(refused.json())
