"""`GET /docs`: the OpenAPI document in Swagger UI, every file served from here (no CDN: works offline).

The Swagger UI files come from the installed `swagger_ui_bundle` package; only the few the page uses
are served, by name from a fixed table, so no request can name another file.
"""

from __future__ import annotations

import functools
from pathlib import Path

from litestar import Response, get
from litestar.params import FromPath

from .errors import ApiError

ASSET_PREFIX = "/docs/assets/"

#: our own start-up script, a file rather than inline so the page's CSP can forbid inline scripts
_INIT_SCRIPT = b"""window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    validatorUrl: null
  });
});
"""

_JS = "text/javascript; charset=utf-8"
_CSS = "text/css; charset=utf-8"
#: name -> content type, for the Swagger UI files the page loads
_BUNDLED = {
    "swagger-ui-bundle.js": _JS,
    "swagger-ui.css": _CSS,
    "favicon-32x32.png": "image/png",
}

_PAGE = f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Interactions API</title>
  <link rel="stylesheet" href="{ASSET_PREFIX}swagger-ui.css">
  <link rel="icon" type="image/png" href="{ASSET_PREFIX}favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{ASSET_PREFIX}swagger-ui-bundle.js" charset="utf-8"></script>
  <script src="{ASSET_PREFIX}init.js" charset="utf-8"></script>
</body>
</html>
""".encode()

# Same-origin only: the browser itself refuses anything the page might try to load from elsewhere.
# Swagger UI sets inline styles and draws some icons from data: URLs.
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
}
_ASSET_HEADERS = {"Cache-Control": "public, max-age=3600"}


def _bundle_dir() -> Path:
    # imported here: only a /docs request needs the package
    from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]

    return Path(swagger_ui_path)


def _asset(name: str) -> tuple[bytes, str] | None:
    """(body, content type) of a file the page loads, or None."""
    if name == "init.js":
        return _INIT_SCRIPT, _JS
    content_type = _BUNDLED.get(name)
    if content_type is None:
        return None
    return _bundled(name), content_type


@functools.cache
def _bundled(name: str) -> bytes:
    # read once per process; only names from _BUNDLED get here, so the cache stays that small
    return (_bundle_dir() / name).read_bytes()


@get("/docs")
async def page() -> Response[bytes]:
    return Response(content=_PAGE, media_type="text/html; charset=utf-8", headers=_PAGE_HEADERS)


@get(ASSET_PREFIX + "{name:str}")
async def asset(name: FromPath[str]) -> Response[bytes]:
    found = _asset(name)
    if found is None:
        raise ApiError(404, f"No documentation asset {name!r}")
    body, content_type = found
    return Response(content=body, media_type=content_type, headers=_ASSET_HEADERS)


HANDLERS = [page, asset]
