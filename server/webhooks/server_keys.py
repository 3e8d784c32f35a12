"""The server keys that seal webhook secrets and signing keys at rest (secrets.py), current first.

From IX_WEBHOOK_KEYS (base64 of 32 bytes each, comma-separated, the current key first, then older ones
still needed to open what they sealed) or, without it, from `webhooks.key_file` under the data directory,
made on first use. A key file suits one machine; processes on several machines must share IX_WEBHOOK_KEYS,
or each would seal with a key the others cannot open.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import logging
import os
import secrets as random
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from ..config_errors import ConfigError
from ..settings import Settings
from .secrets import SERVER_KEY_BYTES

VARIABLE: Final = "IX_WEBHOOK_KEYS"

log = logging.getLogger(__name__)


def load(settings: Settings, environ: Mapping[str, str] | None = None) -> list[bytes]:
    """The server keys, current first (at least one)."""
    environ = os.environ if environ is None else environ
    configured = environ.get(VARIABLE, "").strip()
    if configured:
        return parse(configured)
    return [from_file(settings.data_dir / settings.webhooks.key_file)]


def parse(value: str) -> list[bytes]:
    """The keys of IX_WEBHOOK_KEYS; a malformed one is a ConfigError naming its place, never its value."""
    found: list[bytes] = []
    for place, entry in enumerate(value.split(","), start=1):
        key = _decode(entry.strip())
        if key is None:
            raise ConfigError(
                f"{VARIABLE}: key {place} is not base64 of {SERVER_KEY_BYTES} bytes (make one with "
                "`python -c 'import os, base64; print(base64.b64encode(os.urandom(32)).decode())'`)"
            )
        found.append(key)
    return found


def _decode(entry: str) -> bytes | None:
    try:
        key = base64.b64decode(entry, validate=True)
    except (binascii.Error, ValueError):
        return None
    return key if len(key) == SERVER_KEY_BYTES else None


def from_file(path: Path) -> bytes:
    """The key in `path`, made first if there is none.

    A new key is written whole to a file of its own, then linked into place: the link fails when another
    process got there first, and both read the key that won, never a half-written file."""
    if not path.exists():
        _make(path)
    key = _decode(path.read_text().strip())
    if key is None:
        raise ConfigError(
            f"{path.name}: not base64 of {SERVER_KEY_BYTES} bytes (the webhook server key file)"
        )
    return key


def _make(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.{random.token_hex(4)}")
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as out:
            out.write(base64.b64encode(random.token_bytes(SERVER_KEY_BYTES)).decode() + "\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(draft, path)
        except FileExistsError:
            return  # another process made it first: its key is the one
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(draft)
    log.warning(
        "made a webhook server key in %s (it seals webhook secrets in Redis): processes on other machines "
        "sharing this Redis cannot read it and need the same key in %s",
        path.name,
        VARIABLE,
    )
