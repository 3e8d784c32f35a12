"""The Interaction resource, the create request and their parts (spec §3, §4)."""

from __future__ import annotations

import re
from typing import Any

from .base import Wire
from .steps import Step
from .tools import GenerationConfig, Tool


class ModalityTokens(Wire):
    modality: str | None = None
    tokens: int | None = None


class Usage(Wire):
    total_input_tokens: int | None = None
    total_output_tokens: int | None = None
    total_thought_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_tool_use_tokens: int | None = None
    total_tokens: int | None = None
    initial_input_tokens: int | None = None
    input_tokens_by_modality: list[ModalityTokens] | None = None
    output_tokens_by_modality: list[ModalityTokens] | None = None
    cached_tokens_by_modality: list[ModalityTokens] | None = None
    tool_use_tokens_by_modality: list[ModalityTokens] | None = None
    grounding_tool_count: list[dict[str, Any]] | None = None


class ErrorInfo(Wire):
    """An entry of `errors` on an interaction, and the body of an `error` SSE event."""

    code: str
    message: str


class WebhookConfig(Wire):
    """A request's own webhooks (spec: webhooks-agents-mcp.md §1): its end is sent to `uris`, signed with
    a JWT, with `user_metadata` in the payload (server/webhooks/)."""

    uris: list[str] = []
    user_metadata: dict[str, Any] | None = None


class InteractionConfig(Wire):
    """What a create request configures and the Interaction echoes back."""

    model: str | None = None
    agent: str | None = None
    system_instruction: str | None = None
    tools: list[Tool] | None = None
    generation_config: GenerationConfig | None = None
    agent_config: dict[str, Any] | None = None
    response_format: Any = None
    response_mime_type: str | None = None
    response_modalities: list[str] | None = None
    safety_settings: list[dict[str, Any]] | None = None
    service_tier: str | None = None
    labels: dict[str, str] | None = None
    cached_content: str | None = None
    environment: Any = None
    webhook_config: WebhookConfig | None = None


class CreateRequest(InteractionConfig):
    """The body of `POST /{ver}/interactions`. `input` is normalised separately (codec.normalize_input)."""

    input: Any = None
    previous_interaction_id: str | None = None
    store: bool = True
    background: bool = False
    stream: bool = False
    continuation_token: str | None = None


class Interaction(InteractionConfig, kw_only=True):
    """The resource as returned by create, get and cancel."""

    id: str | None = None
    object: str  # always "interaction"; required so that omit_defaults keeps it
    status: str
    created: str | None = None
    updated: str | None = None
    previous_interaction_id: str | None = None
    steps: list[Step] | None = None
    usage: Usage | None = None
    errors: list[ErrorInfo] | None = None
    input: Any = None
    warnings: list[str] | None = None


_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def is_interaction_id(value: str) -> bool:
    """Ids are URL-safe (they go into paths unencoded, spec §0); anything else names no interaction."""
    return _ID.fullmatch(value) is not None
