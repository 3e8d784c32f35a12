"""When a failed delivery is tried again: full jitter over a doubling window.

The pause after attempt n is drawn uniformly between `backoff_initial_seconds` and a ceiling of
`backoff_initial_seconds` * 2^n, at most `backoff_max_seconds`: the window doubles with each attempt, and
the whole of it is random, so the retries of events that failed together (a receiver down) come back
spread over the window rather than at one moment (half of the pause random, as before, kept them within
its second half: the events of one outage came back in a crowd). The floor keeps a retry from following
its failure at once. The retries end `retry_for_seconds` after the interaction ended: the window is cut
there, and no retry is queued once the floor itself is past it.
"""

from __future__ import annotations

import random

from ..sections import WebhookSettings

#: a generator of its own: the module's shared one is other code's (Hypothesis, tests seeding it)
_draws = random.Random()


def retry_at_ms(
    settings: WebhookSettings, attempt: int, first_ms: int, now: float, draws: random.Random = _draws
) -> int | None:
    """When attempt `attempt + 1` runs (ms), after attempt `attempt` failed at `now` (s) for an event whose
    interaction ended at `first_ms`; None when the retries are over."""
    floor = settings.backoff_initial_seconds
    ceiling = max(floor, min(settings.backoff_max_seconds, floor * 2.0 ** min(attempt, 60)))
    end = first_ms / 1000 + settings.retry_for_seconds
    earliest, latest = now + floor, min(now + ceiling, end)
    if earliest > end:
        return None
    return int(draws.uniform(earliest, latest) * 1000)
