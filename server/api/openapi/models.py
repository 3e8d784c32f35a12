"""The Models resource's paths and schemas (api/models.py), on Google's and Vertex's prefixes."""

from __future__ import annotations

import msgspec

from ...upstream.catalog import MAX_PAGE_SIZE, METHODS, PAGE_TOKEN_PATTERN, Model, ModelList
from .common import Json, ref, schema_hook
from .parameters import errors
from .resources import prefixed, reply

TAG = "Models"
TAG_VERTEX = "Models (Vertex paths)"
#: what the openai SDKs get on the same paths (api/openai/dialect.py)
_OPENAI = (
    "On `/v1` (not another version, not the Vertex form) a request that authenticates with "
    "`Authorization: Bearer` and sends none of `x-goog-api-key`, `?key=` and `x-goog-api-client` is an "
    "openai SDK's, answered in OpenAI's shape (README, Models; always so under `/openai/v1`)"
)
_NAME: Json = {
    "name": "name",
    "in": "path",
    "required": True,
    "description": "A listed model's id, with or without the `models/` prefix (`echo`, `models/echo`)",
    "schema": {"type": "string"},
}


def _page_parameters() -> list[Json]:
    size = f"At most this many (50 by default; more than {MAX_PAGE_SIZE} is read as {MAX_PAGE_SIZE})"
    token = "`nextPageToken` of the previous page"
    parameters: list[Json] = []
    for name, alias in (("pageSize", "page_size"), ("pageToken", "page_token")):
        schema: Json = (
            {"type": "integer", "minimum": 0}
            if name == "pageSize"
            else {"type": "string", "pattern": PAGE_TOKEN_PATTERN}
        )
        text = size if name == "pageSize" else token
        parameters.append({"name": name, "in": "query", "description": text, "schema": schema})
        parameters.append(
            {"name": alias, "in": "query", "description": f"The same as `{name}`", "schema": schema}
        )
    return parameters


def _operations() -> dict[str, Json]:
    return {
        "list": {
            "operationId": "ListModels",
            "summary": "List the models this server serves: the built-in `echo` and `echo-slow`, and every "
            "model of config/models.toml named by a literal `match` (a glob is not listed)",
            "description": _OPENAI,
            "parameters": _page_parameters(),
            "responses": {
                "200": reply("A page of models; `nextPageToken` when there are more", ref("ModelList")),
                **errors(e400="A bad page size or page token", e404="An unknown API version"),
            },
        },
        "get": {
            "operationId": "GetModel",
            "summary": "Get one listed model",
            "description": _OPENAI,
            "responses": {
                "200": reply("The model", ref("Model")),
                **errors(e404="Not a listed model, or an unknown API version"),
            },
        },
    }


def model_paths() -> Json:
    paths: Json = {}
    for prefix, base, ops in prefixed(_operations, (TAG, TAG_VERTEX)):
        paths[f"{prefix}/models"] = {"parameters": base, "get": ops["list"]}
        paths[f"{prefix}/models/{{name}}"] = {"parameters": [*base, _NAME], "get": ops["get"]}
    return paths


def model_schemas() -> Json:
    _, components = msgspec.json.schema_components(
        [Model, ModelList], schema_hook=schema_hook, ref_template="#/components/schemas/{name}"
    )
    model = components["Model"]
    model["required"] = ["name", "displayName", "description", "supportedGenerationMethods"]
    model["properties"]["name"]["pattern"] = "^models/"
    model["properties"]["supportedGenerationMethods"] = {
        "type": "array",
        "items": {"type": "string", "enum": list(METHODS)},
        "description": "What the model serves here: generateContent (and its stream), countTokens, and the "
        "Interactions API's create",
    }
    model["properties"]["outputTokenLimit"] = {
        "type": "integer",
        "description": "Known for the echo models only (`[echo] max_output_words`)",
    }
    model["properties"]["inputTokenLimit"] = {"type": "integer", "description": "Not known: left out"}
    components["ModelList"]["properties"]["nextPageToken"] = {
        "type": "string",
        "pattern": PAGE_TOKEN_PATTERN,
        "description": "Where the next page starts: pass it as `pageToken`; left out on the last page",
    }
    return components
