"""What a tenant used (api/usage.py, our extension): the usage report, on Google's and Vertex's prefixes."""

from __future__ import annotations

import msgspec

from ...usage.report import DEFAULT_DAYS, MAX_DAYS, Report
from .common import Json, ref, schema_hook
from .parameters import errors
from .resources import prefixed, query, reply

TAG = "Usage (this server's extension)"
TAG_VERTEX = "Usage (Vertex paths)"
_DAY: Json = {
    "anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}],
    "description": "YYYY-MM-DD (UTC), or an RFC 3339 time (its UTC day)",
}


def _operations() -> dict[str, Json]:
    return {
        "usage": {
            "operationId": "GetUsage",
            "summary": "What the API key's interactions that ended between two days used: how many ended "
            "with each status, their tokens as the upstream reported them, their model calls",
            "parameters": [
                {
                    **query("start", f"The first day (default: {DEFAULT_DAYS - 1} days before end)"),
                    "schema": _DAY,
                },
                {**query("end", "The last day, included (default: today)"), "schema": _DAY},
                {
                    **query(
                        "group_by",
                        "`model` (a model's or an agent's), `day`, or `label.<key>` (by that label's "
                        "value; those without it in a group of their own); none: the total only",
                    ),
                    "schema": {"type": "string", "pattern": r"^(model|day|label\..+)$"},
                },
            ],
            "responses": {
                "200": reply("The totals, and the groups asked for", ref("UsageReport")),
                **errors(
                    e400=f"A bad parameter, or more than {MAX_DAYS} days (the message names it)",
                    e404="An unknown API version",
                ),
            },
        }
    }


def usage_paths() -> Json:
    return {
        f"{prefix}/usage": {"parameters": base, "get": ops["usage"]}
        for prefix, base, ops in prefixed(_operations, (TAG, TAG_VERTEX))
    }


def usage_schemas() -> Json:
    _, components = msgspec.json.schema_components(
        [Report], schema_hook=schema_hook, ref_template="#/components/schemas/{name}"
    )
    components["UsageReport"] = components.pop("Report")
    components["UsageRow"] = components.pop("Row")
    text = msgspec.json.encode(components).replace(
        b"#/components/schemas/Row", b"#/components/schemas/UsageRow"
    )
    found: Json = msgspec.json.decode(text)
    return found
