"""`python -m server` (what `make run` runs): the web server under granian.

Without REDIS_URL it starts the embedded default: a private redis-server with its data under var/, and a
worker inside the web process, so it answers with no configuration at all.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from granian import Granian
from granian.constants import Interfaces, Loops

from . import settings as settings_module
from .embedded_redis import RedisProcess

VAR_DIR = Path(__file__).resolve().parent.parent / "var"


def banner(host: str, port: int, redis_url: str, embedded: bool) -> str:
    base = f"http://{host}:{port}"
    lines = [
        f"Interaction server on {base}  (Redis: {redis_url}{', embedded' if embedded else ''})",
        "",
        "Try it:",
        f"  curl -s {base}/v1beta/interactions -H 'x-goog-api-key: any-key' \\",
        '       -H \'content-type: application/json\' -d \'{"model": "echo", "input": "Hello there"}\'',
        "",
        "  from google import genai",
        f"  client = genai.Client(api_key='any-key', http_options={{'base_url': '{base}'}})",
        "  reply = client.interactions.create(model='echo', input='Hello there')",
        "  print(reply.id, reply.output_text)",
        "",
    ]
    if embedded:
        lines += [f"More workers against this Redis:  REDIS_URL={redis_url} make worker", ""]
    return "\n".join(lines)


def main() -> int:
    redis_process = None
    if not os.environ.get("REDIS_URL"):
        redis_process = RedisProcess(VAR_DIR / "redis").start()
        os.environ["REDIS_URL"] = redis_process.url
        os.environ.setdefault("EMBEDDED_WORKER", "1")
    settings = settings_module.load()
    print(
        banner(settings.http.host, settings.http.port, settings.redis_url, redis_process is not None),
        flush=True,
    )
    try:
        Granian(
            "server.app:create_app",
            factory=True,
            address=settings.http.host,
            port=settings.http.port,
            interface=Interfaces.ASGI,
            workers=settings.http.web_processes,
            loop=Loops.uvloop,
            log_access=False,
        ).serve()
    finally:
        if redis_process is not None:
            redis_process.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
