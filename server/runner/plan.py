"""The create plan: how a create request runs, decided once, from the request alone (pure).

    STATELESS   store=false: nothing is stored; the steps the client sent are the whole conversation
    INLINE      a plain foreground call: run in the request, stored once finished (nobody can address it
                before it is answered, so it needs no record, lease or log while it runs)
    LOGGED      a foreground call someone may address while it runs (a stream, or an Idempotency-Key a
                repeat waits on): stored first, run in the request's process, its events logged
    BACKGROUND  stored queued, run by a worker; the reply is the queued interaction (or its log's stream)

Each mode has its executor in runner/create.py and its sink in runner/sinks.py.
"""

from __future__ import annotations

import enum

import msgspec

from ..agents.apply import routed
from ..errors import InvalidArgument
from ..protocol.interaction import CreateRequest, InteractionConfig
from ..protocol.records import StoredConfig
from ..protocol.steps import Step
from ..store.agents import AgentRecord
from ..store.idempotency import KeyClaim


class Mode(enum.Enum):
    STATELESS = "stateless"
    INLINE = "inline"
    LOGGED = "logged"
    BACKGROUND = "background"


class CreatePlan(msgspec.Struct, kw_only=True):
    mode: Mode
    #: the client reads the reply as a stream of events
    stream: bool
    config: InteractionConfig
    stored: StoredConfig
    input_steps: list[Step]
    previous_interaction_id: str | None
    #: when it was asked for (the API's timestamp)
    created: str
    #: the request's Idempotency-Key: a repeat gets the first call's interaction
    idempotency_key: str | None = None
    #: what the interaction's store records for that key, once it has an id (runner/idempotency.py)
    key: KeyClaim | None = None
    #: the tokens its run may use before a token limit of its tenant (None: none; limits/quota.py)
    budget: int | None = None
    #: the trigger execution creating it (store/triggers.marker), which hears of its end
    execution: str | None = None


def plan_create(
    request: CreateRequest,
    input_steps: list[Step],
    warnings: list[str],
    agent: AgentRecord | None = None,
    *,
    created: str,
    idempotency_key: str | None = None,
) -> CreatePlan:
    """Check the request's combinations (400s naming the field) and choose its mode. `agent`: the stored
    agent the request's `agent` names (merged into it already, agents/apply.py): it runs on its base model."""
    config = config_of(request)
    if config.model and config.agent:
        raise InvalidArgument("Give either `model` or `agent`, not both", "agent")
    if not config.model and not config.agent:
        raise InvalidArgument("`model` (or `agent`) is required", "model")
    if not input_steps:
        raise InvalidArgument("`input` is required and must not be empty", "input")
    if agent is not None:
        config = routed(config, agent)
    return CreatePlan(
        mode=_mode(request, idempotency_key is not None),
        stream=request.stream,
        config=config,
        stored=StoredConfig(config=config, input=request.input, warnings=warnings or None),
        input_steps=input_steps,
        previous_interaction_id=request.previous_interaction_id,
        created=created,
        idempotency_key=idempotency_key,
    )


def _mode(request: CreateRequest, idempotent: bool) -> Mode:
    if not request.store:
        if request.previous_interaction_id:
            raise InvalidArgument(
                "`store=false` cannot be combined with `previous_interaction_id`", "previous_interaction_id"
            )
        if request.background:
            raise InvalidArgument("`store=false` cannot be combined with `background=true`", "background")
        return Mode.STATELESS
    if request.background:
        return Mode.BACKGROUND
    if request.stream or idempotent:
        return Mode.LOGGED
    return Mode.INLINE


def config_of(request: CreateRequest) -> InteractionConfig:
    fields = {name: getattr(request, name) for name in InteractionConfig.__struct_fields__}
    return InteractionConfig(**fields)
