"""OpenAI's dialects (the Responses API, Chat Completions, the models list in OpenAI's shape) over the same
store, runs and event log as Google's: each handler decodes its dialect's request with its codec
(server/dialects/), asks the same use cases (runner/) and encodes what they answer. Served under `/v1` (the
base URL the openai SDKs are given, README "OpenAI's dialects") and `/openai/v1`, their errors in OpenAI's
envelope (errors.py)."""
