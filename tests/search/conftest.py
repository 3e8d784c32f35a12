"""The search tests' tenants."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from ..support import Stack, new_key
from .support import Tenant


@pytest.fixture
def tenants() -> Iterator[Callable[[Stack], Tenant]]:
    """A new tenant (API key) on a stack; their clients closed afterwards."""
    made: list[Tenant] = []

    def new(stack: Stack) -> Tenant:
        made.append(Tenant(stack, new_key()))
        return made[-1]

    yield new
    for each in made:
        each.close()
