"""Google's Interactions API as an upstream: the API this server speaks, called statelessly (`request`
writes the turn as a `store: false` create of the whole conversation, `decode` reads its event stream,
`backend` sends it)."""

from .backend import InteractionsBackend

__all__ = ["InteractionsBackend"]
