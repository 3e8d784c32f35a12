"""Gemini's generateContent, the dialect most Gemini clients speak (`client.models.generate_content`, the
frameworks built on it): a stateless turn of the Interactions use case, over the one runner and event log.
`decode` reads a request (names, contents, schemas help it), `encode` answers a turn, `events` renders its
stream; `wire` is Google's format, both ways (our Gemini backend speaks it too). Pure."""
