"""Webhooks (issue 14): what the server needs to tell a user's endpoint that an interaction changed status.

secrets     signing secrets: new, truncated for display, sealed at rest with a server key
signing     the headers of a delivery: Standard Webhooks HMAC signatures, or an RS256 JWT
jwks        the RS256 signing keys (kept in Redis, rotated) and the JWKS document that publishes them
"""
