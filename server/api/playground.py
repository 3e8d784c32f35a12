"""`GET /playground`: a single page to try the API from a browser, and `GET /`, a landing page linking to it
and to /docs.

The page is plain files in server/playground/ (no build step, no CDN: it works offline) and calls only the
public API, with the key the user types. Its files are served by name from a fixed table, so no request can
name another file.
"""

from __future__ import annotations

import functools
from pathlib import Path

from litestar import Response, get
from litestar.params import FromPath

from .errors import ApiError

_DIR = Path(__file__).resolve().parent.parent / "playground"
ASSET_PREFIX = "/playground/"

# litestar adds "; charset=utf-8" to text/* types itself
_HTML = "text/html"
_JS = "text/javascript"
_CSS = "text/css"
#: name -> content type, every file the page loads
_ASSETS = {
    "app.js": _JS,
    "api.js": _JS,
    "view.js": _JS,
    "style.css": _CSS,
    "favicon.svg": "image/svg+xml",
}

# Same-origin only, and no inline script or style: the page cannot be made to run anything it did not ship,
# even if an answer it shows held markup (it inserts text, never HTML).
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "Cache-Control": "no-cache",
}
# revalidated on each load: an upgraded server's page never runs with the old scripts
_ASSET_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}

_LANDING = b"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Interactions API server</title>
  <link rel="stylesheet" href="/playground/style.css">
  <link rel="icon" type="image/svg+xml" href="/playground/favicon.svg">
</head>
<body class="landing">
  <main>
    <h1>Interactions API server</h1>
    <p>A self-hosted server for the Gemini Interactions API.</p>
    <ul>
      <li><a href="/playground">Playground</a>: chat, stream, run in the background, cancel, list.</li>
      <li><a href="/docs">API reference</a> (<a href="/openapi.json">OpenAPI document</a>)</li>
    </ul>
  </main>
</body>
</html>
"""


@functools.cache
def _read(name: str) -> bytes:
    # read once per process; only names from _ASSETS (and the page) get here
    return (_DIR / name).read_bytes()


@get("/", include_in_schema=False)
async def landing() -> Response[bytes]:
    return Response(content=_LANDING, media_type=_HTML, headers=_PAGE_HEADERS)


@get("/playground", include_in_schema=False)
async def page() -> Response[bytes]:
    return Response(content=_read("index.html"), media_type=_HTML, headers=_PAGE_HEADERS)


@get(ASSET_PREFIX + "{name:str}", include_in_schema=False)
async def asset(name: FromPath[str]) -> Response[bytes]:
    content_type = _ASSETS.get(name)
    if content_type is None:
        raise ApiError(404, f"No playground file {name!r}")
    return Response(content=_read(name), media_type=content_type, headers=_ASSET_HEADERS)


HANDLERS = [landing, page, asset]
