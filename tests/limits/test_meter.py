"""What a run with a token budget counts as it ends (limits/meter.py, pure): the upstream's own report when
the upstream ended the run, and past that report the estimate of what streamed when the run was cut."""

from __future__ import annotations

from server.limits.meter import Meter
from server.protocol import deltas as d
from server.protocol.interaction import InteractionConfig, Usage
from server.protocol.steps import Step
from server.upstream.base import StepDelta, UpstreamRequest, UsageReported


def _meter(history: list[Step] | None = None) -> Meter:
    config = InteractionConfig()
    return Meter(1000, UpstreamRequest(model="m", upstream_model="m", history=history or [], config=config))


def _streamed(meter: Meter, text: str) -> None:
    assert not meter.feed(StepDelta(delta=d.TextDelta(text=text)))


def test_a_run_the_upstream_ended_counts_its_report() -> None:
    meter = _meter()
    report = Usage(total_input_tokens=10, total_output_tokens=5, total_tokens=15)
    _streamed(meter, "x" * 40)
    assert meter.counted(report, cut=False) is report


def test_a_cut_run_counts_past_its_last_report_what_streamed_since() -> None:
    meter = _meter()
    early = Usage(total_input_tokens=10, total_output_tokens=2, total_tokens=12)
    assert not meter.feed(UsageReported(usage=early))
    _streamed(meter, "y" * 40)  # 10 tokens by the estimate, after the report
    counted = meter.counted(early, cut=True)
    assert (counted.total_output_tokens, counted.total_tokens) == (12, 22)


def test_a_run_with_no_report_counts_the_estimates_whether_cut_or_not() -> None:
    for cut in (True, False):
        meter = _meter()
        _streamed(meter, "z" * 20)
        counted = meter.counted(None, cut=cut)
        assert (counted.total_output_tokens, counted.total_input_tokens) == (5, 0)
