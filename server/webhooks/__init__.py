"""Webhooks: telling a user's endpoint that an interaction ended, as Google's API does (and, to webhooks
subscribed to OpenAI's events, that a response ended, as OpenAI's does).

resource    the Webhooks resource (create, list, get, update, delete, rotate), with rules and wire types
config      a request's own `webhook_config`, checked at create
events      the events and their thin payloads, Google's and OpenAI's
dispatch    an interaction's end turned into one delivery job per target (the event job), and pings
pending     a delivery on its way from attempt to attempt (what its jobs carry)
sending     one attempt of a delivery job: signed, sent, recorded, and the next one queued if it failed
delivery    the HTTP attempt itself, to a checked address, with no redirects
addresses   which URIs may be called (also used for MCP servers)
secrets     signing secrets: new, truncated for display, sealed at rest with a server key
server_keys the server keys that seal them (IX_WEBHOOK_KEYS, or a key file)
signing     the headers of a delivery: Standard Webhooks HMAC signatures, or an RS256 JWT
jwks        the RS256 signing keys (kept in Redis, rotated) and the JWKS document that publishes them
"""
