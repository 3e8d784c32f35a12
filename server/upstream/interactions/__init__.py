"""Google's Interactions API as an upstream: the API this server speaks. A model turn is called statelessly
(`request` writes it as a `store: false` create of the whole conversation, `decode` reads its event stream,
`backend` sends it); an agent's turn is a background interaction of Google's own, created once and
followed to its end (`remote`)."""

from .backend import InteractionsBackend

__all__ = ["InteractionsBackend"]
