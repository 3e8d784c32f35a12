"""The event log of an interaction: SSE framing, and reading it back (replay, follow, resume)."""
