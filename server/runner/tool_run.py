"""A run with MCP servers: their sessions opened for the run and closed with it, and the loop of model
calls and tool calls between (runner/tool_loop.py says what the model and the client each see).

Cancelling the run (a cancel, a worker shutting down) cancels whatever it is waiting for, a model call or
a tool call, and the sessions are closed on the way out, their connections with them. The steps made so
far are the run's output like any other: a run handed to another worker after it made output settles as
failed with them (runner/jobs.py), so a tool call that completed is never made a second time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Final

import msgspec

from ..errors import RequestError
from ..observability import tools as observed
from ..outbound import Outbound
from ..protocol.interaction import ErrorInfo
from ..protocol.steps import Step
from ..sections import ToolSettings
from ..tools.mcp import CallResult, McpSessions
from ..upstream import base as up
from ..upstream.base import UpstreamError
from ..webhooks.addresses import AllowList
from . import tool_headers
from .spec import RunSpec
from .tool_checks import places
from .tool_loop import ModelCall, PendingCall, offered_name, offered_request, result_events, result_for_model

#: the error code of a run whose MCP server could not be reached
UNAVAILABLE: Final = "mcp_server_unavailable"
#: the codes of a loop that stopped on one of its limits (the run ends `incomplete`)
MODEL_CALLS: Final = "tool_loop_model_calls"
TOOL_TIME: Final = "tool_loop_time"
_CLOSE_SECONDS: Final = 5.0

Upstream = Callable[[RunSpec], AsyncGenerator[up.UpstreamEvent, None]]


class ToolServerError(UpstreamError):
    """An MCP server of the request could not be reached, or refused the session: the run fails."""

    def __init__(self, message: str) -> None:
        super().__init__("mcp", 0, message)


class ToolRun:
    def __init__(
        self,
        settings: ToolSettings,
        allow: AllowList,
        server_keys: Sequence[bytes],
        outbound: Outbound | None = None,
    ) -> None:
        self.settings = settings
        self.allow = allow
        self.server_keys = list(server_keys)
        #: the proxies and trust store of every MCP connection (None: each run reads the environment)
        self.outbound = outbound

    async def events(self, spec: RunSpec, upstream: Upstream) -> AsyncGenerator[up.UpstreamEvent, None]:
        named, indexes = places(spec.request.config.tools)
        servers = [tool_headers.opened(server, spec.tenant, self.server_keys) for server in named]
        try:
            # checked at create already: a refusal now (DNS changed since) fails the run like a server down
            sessions = await McpSessions.open(
                servers, self.settings, self.allow, indexes=indexes, outbound=self.outbound
            )
        except (RequestError, UpstreamError, OSError) as exc:
            raise ToolServerError(str(exc)) from None
        try:
            async with contextlib.aclosing(Loop(self.settings, sessions, upstream).run(spec)) as events:
                async for event in events:
                    yield event
        finally:
            # closed beside the run, not before its end is saved: a cancelled run's output is saved at
            # once (a cancel waits for it), while the sessions' connections and tasks wind down
            _closing.add(task := asyncio.create_task(_close(sessions)))
            task.add_done_callback(_closing.discard)


#: sessions being closed (a reference, so that their task is not collected mid-way)
_closing: set[asyncio.Task[None]] = set()


async def _close(sessions: McpSessions) -> None:
    with contextlib.suppress(Exception):
        async with asyncio.timeout(_CLOSE_SECONDS):
            await sessions.aclose()


class Loop:
    """The model calls and tool calls of one run."""

    def __init__(self, settings: ToolSettings, sessions: McpSessions, upstream: Upstream) -> None:
        self.settings = settings
        self.sessions = sessions
        self.upstream = upstream
        self.tools = {offered_name(tool.server_name, tool.name): tool for tool in sessions.tools}
        #: what is left of the run's time for tool calls
        self.budget = settings.mcp_run_timeout_seconds

    async def run(self, spec: RunSpec) -> AsyncGenerator[up.UpstreamEvent, None]:
        request = offered_request(spec.request, self.sessions.tools)
        usage = None
        for _ in range(self.settings.max_model_calls):
            call = ModelCall(self.tools, usage)
            async with contextlib.aclosing(
                self.upstream(msgspec.structs.replace(spec, request=request))
            ) as events:
                async for event in events:
                    for shown in call.feed(event):
                        yield shown
            usage = call.usage
            if not call.pending or call.held is None:
                return
            results: list[Step] = []
            for pending in call.pending:
                outcome = await self._call(pending)
                for shown in result_events(pending, outcome or _OUT_OF_TIME):
                    yield shown
                if outcome is None:
                    yield _stopped(
                        TOOL_TIME, "the run's time for tool calls ([tools] mcp_run_timeout_seconds) ran out"
                    )
                    return
                results.append(result_for_model(pending, outcome))
            if call.client_calls:
                # the client's own functions: its function_result continues the conversation
                yield call.held
                return
            request = msgspec.structs.replace(
                request, history=[*request.history, *call.model.steps, *results]
            )
        limit = self.settings.max_model_calls
        yield _stopped(
            MODEL_CALLS, f"the model still called tools after {limit} model calls ([tools] max_model_calls)"
        )

    async def _call(self, pending: PendingCall) -> CallResult | None:
        """The tool's result, or None when the run's time for tool calls ran out first."""
        if self.budget <= 0:
            return None
        started = time.monotonic()
        outcome: CallResult | None = None
        try:
            async with asyncio.timeout(self.budget):
                shown = pending.shown
                outcome = await self.sessions.call(shown.server_name, shown.name, shown.arguments)
        except TimeoutError:
            outcome = None
        finally:
            spent = time.monotonic() - started
            self.budget -= spent
        observed.called("out_of_time" if outcome is None else "error" if outcome.is_error else "ok", spent)
        return outcome


_OUT_OF_TIME = CallResult(
    result="The run's time for tool calls ran out before this call finished", is_error=True
)


def _stopped(code: str, message: str) -> up.Finished:
    return up.Finished(status="incomplete", error=ErrorInfo(code=code, message=message))
