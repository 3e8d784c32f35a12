"""What one run needs, whatever its sink: which interaction, under which fence, and the upstream call."""

from __future__ import annotations

import msgspec

from ..protocol.interaction import InteractionConfig
from ..protocol.records import StoredConfig
from ..protocol.steps import Step
from ..upstream.base import Backend, UpstreamRequest
from .history import model_steps


class Calls:
    """A count of model calls."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


class RunSpec(msgspec.Struct, kw_only=True):
    """`tenant`/`interaction_id` are None for `store=false`."""

    tenant: str | None
    interaction_id: str | None
    fence: int = 0
    #: the last event seq already in its log (a re-run continues the numbering)
    seq: int = 0
    #: a background run retries an upstream failure that came before any output
    background: bool = False
    #: emit `interaction.created` first (a new run, not a re-run of a lost one)
    announce: bool = True
    #: step events its log holds already: a re-run following a remote run from its start builds them again
    #: and shows only those after them
    shown: int = 0
    #: the model calls this run has made (each attempt, each turn of a tool loop): its settle counts them.
    #: One counter shared by the copies a tool loop makes of the spec for each of its calls
    calls: Calls = msgspec.field(default_factory=Calls)
    #: the tokens it may use before a token limit of its tenant (None: none): reached, the run ends
    #: `budget_exceeded` (limits/meter.py)
    budget: int | None = None
    created: str
    previous_interaction_id: str | None = None
    config: StoredConfig
    request: UpstreamRequest
    backend: Backend


def upstream_request(
    config: InteractionConfig,
    upstream_model: str,
    history: list[Step],
    *,
    background: bool = False,
    remote_id: str | None = None,
) -> UpstreamRequest:
    """Every run's model call is made here: its history as the backends read it (history.model_steps).
    `background`: a worker runs it; `remote_id`: the upstream's run of it, started by an earlier run."""
    return UpstreamRequest(
        model=config.model or config.agent or "",
        upstream_model=upstream_model,
        history=model_steps(history),
        config=config,
        background=background,
        remote_id=remote_id,
    )
