"""OpenAI's Responses API as a codec over the interaction record: `wire` (its objects), `decode` (a create
body -> our create request and input steps), `encode` (an interaction -> a Response and its items), `items`
(the input items listing), `events` (its stream, rendered from the interaction's event log)."""
