"""The interaction a trigger creates at each execution: checked at the trigger's create as a create of it
would be (decoded strictly, its webhook_config, stored agent and MCP servers checked, its model or agent
routed), so that a 400 comes then, naming the field inside `interaction`, and not at 3 am.

Each execution creates it in the background (a trigger has no client waiting), stored, continuing the
trigger's last interaction (`previous_interaction_id`), under an Idempotency-Key of the execution's: a
fire run twice creates one interaction.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument
from ..protocol import views
from ..protocol.codec import decode_create, json_encoder
from ..protocol.interaction import CreateRequest
from ..protocol.steps import Step
from ..runner.create import Creator
from ..runner.plan import plan_create

#: what a trigger's interaction may not choose: how it runs is the trigger's
_FIXED = {"background": True, "stream": False}


def body_of(template: dict[str, Any], previous_interaction_id: str | None) -> bytes:
    """The create body of one execution: the template, in the background, continuing `previous`."""
    body = {**template, **_FIXED}
    if previous_interaction_id:
        body["previous_interaction_id"] = previous_interaction_id
    return json_encoder.encode(body)


def decoded(body: bytes, field: str = "interaction") -> tuple[CreateRequest, list[Step], list[str]]:
    """decode_create, strict, its errors naming the field inside `interaction`."""
    try:
        return decode_create(body, strict=True)
    except InvalidArgument as exc:
        raise within(exc, field) from None


def within(exc: InvalidArgument, field: str) -> InvalidArgument:
    return InvalidArgument(exc.message, f"{field}.{exc.field}" if exc.field else field)


async def check(creator: Creator, tenant: str, template: Any) -> dict[str, Any]:
    """The template, once it passed every check a create of it would."""
    if not isinstance(template, dict) or not template:
        raise InvalidArgument("a trigger needs the interaction it creates (a create's body)", "interaction")
    if template.get("store") is False:
        raise InvalidArgument("a trigger's interactions are stored: leave store out", "interaction.store")
    request, steps, warnings = decoded(body_of(template, template.get("previous_interaction_id")))
    try:
        request, agent, warnings = await creator.preflight.checked(tenant, request, warnings)
        plan = plan_create(request, steps, warnings, agent, created=views.timestamp())
        creator.router.route(plan.config)
    except InvalidArgument as exc:
        raise within(exc, "interaction") from None
    return template
