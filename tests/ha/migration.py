"""A slot of the test Cluster (cluster_nodes.py) being moved in a background thread."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Migration:
    """A slot being moved in a background thread: `moved` counts the keys moved so far, `join` waits for the
    end and raises what the move raised."""

    def __init__(self, run: Callable[[Callable[[int], None]], int], name: str) -> None:
        self.moved = 0
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(run,), name=name, daemon=True)
        self._thread.start()

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def join(self, timeout: float = 60.0) -> int:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"the migration did not end within {timeout}s ({self.moved} keys moved)")
        if self.error is not None:
            raise self.error
        return self.moved

    def _count(self, keys: int) -> None:
        self.moved += keys

    def _run(self, run: Callable[[Callable[[int], None]], int]) -> None:
        # kept for join() to raise in the test's thread: raised here it would only be a warning
        try:
            run(self._count)
        except BaseException as error:
            self.error = error
