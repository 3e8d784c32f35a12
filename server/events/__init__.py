"""The event log of an interaction: the batched writer of a process, and reading it back (replay, follow,
resume). The frames themselves are made in protocol/sse.py."""
