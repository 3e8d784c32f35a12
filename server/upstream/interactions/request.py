"""A turn as a create request of Google's Interactions API, in this server's own wire types.

The conversation is sent whole and `store: false`, so the record kept here stays the one truth and a chain
can move between providers: Google keeps nothing of it. The steps go as they are (the same step types both
ways), but for what another provider made that Google cannot read: a thought whose signature is not
Google's (sealed by upstream/native.py when this backend received it) is left out, another step's foreign
signature is dropped, and Google's own signatures are unsealed before they go back.
"""

from __future__ import annotations

import msgspec

from ...protocol.interaction import CreateRequest
from ...protocol.steps import Step, ThoughtStep
from ...protocol.tools import (
    McpServerTool,
)
from .. import native
from ..base import UpstreamRequest


def build_body(request: UpstreamRequest, backend: str, model: str, *, remote: bool = False) -> CreateRequest:
    """`model`: the name sent; `remote`: an agent's turn, run by Google as a background interaction of its
    own (stored there: Google runs background interactions only stored)."""
    config = request.config
    # MCP servers are this server's to run (the tool loop offers their tools as functions)
    tools = [tool for tool in config.tools or () if not isinstance(tool, McpServerTool)]
    return CreateRequest(
        model=None if remote else model,
        agent=model if remote else None,
        agent_config=config.agent_config if remote else None,
        input=steps_for_google(request.history, backend),
        system_instruction=config.system_instruction,
        tools=tools or None,
        generation_config=config.generation_config,
        response_format=config.response_format,
        response_mime_type=config.response_mime_type,
        response_modalities=config.response_modalities,
        safety_settings=config.safety_settings,
        service_tier=config.service_tier,
        cached_content=config.cached_content,
        store=remote,
        background=remote,
        stream=True,
    )


def steps_for_google(history: list[Step], backend: str) -> list[Step]:
    steps: list[Step] = []
    for step in history:
        sealed = getattr(step, "signature", None)
        if not isinstance(step, msgspec.Struct) or sealed is None:
            if not isinstance(step, ThoughtStep):  # a thought without a signature is nothing to Google
                steps.append(step)
            continue
        signature = native.native_for(sealed, backend)
        if not isinstance(signature, str):
            if isinstance(step, ThoughtStep):
                continue  # another provider's thinking, or none Google could check
            signature = None  # a built-in tool step another backend made: its content, not its seal
        steps.append(msgspec.structs.replace(step, signature=signature))
    return steps
