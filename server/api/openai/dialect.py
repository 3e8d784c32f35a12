"""Which dialect a request on a path both serve speaks: `GET /v1/models` and `GET /v1/models/{id}` are the
openai SDKs' calls under the base URL the README gives them (`<server>/v1`), and the google-genai SDKs' (3.x)
under theirs (the server's root). Told apart by what each SDK sends (checked of both, Python, google-genai
3.3.0 and 3.6.1, and JS):

    google-genai   `x-goog-api-key` (or `?key=`) and always `x-goog-api-client: google-genai-sdk/<v> ...`
    openai         `Authorization: Bearer <key>`, and none of Google's

So a request speaks OpenAI's dialect when it authenticates with a Bearer token and sends none of Google's
key header, key parameter or client header; anything else (no key at all too) is Google's, as these paths
were before OpenAI's were served. Under `/openai/v1` every request is OpenAI's.
"""

from __future__ import annotations

from typing import Any

from litestar import Request

#: what only Google's clients send
_GOOGLE_HEADERS = ("x-goog-api-key", "x-goog-api-client")


def speaks_openai(request: Request[Any, Any, Any]) -> bool:
    headers = request.headers
    if any(name in headers for name in _GOOGLE_HEADERS) or "key" in request.query_params:
        return False
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and bool(token.strip())
