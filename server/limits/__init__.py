"""Operators' limits per tenant (README, "Limits"): requests and tokens per minute, tokens per day and
background runs at once, from server.toml's [auth] and read again when it changes (table.py); checked in
one script call before a create does anything (quota.py), and a run's tokens counted against what was left
when it started, so that reaching a token limit ends it `budget_exceeded` with what it made (meter.py)."""
