"""The paging of this server's lists (webhooks, agents): `page_size` as AIP-158 reads it, and opaque page
tokens that name where the next page starts (the last item's creation ms and id)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

from ..errors import InvalidArgument


def page_size(raw: str | None, default: int, most: int) -> int:
    """A page_size as sent: unset or 0 is the default, more than `most` is `most`; a negative or
    non-numeric one is a 400 naming `page_size`."""
    if raw is None or raw == "":
        return default
    try:
        size = int(raw)
    except ValueError:
        raise InvalidArgument(f"{raw[:32]!r} is not a whole number", "page_size") from None
    if size < 0:
        raise InvalidArgument(f"{size} is negative", "page_size")
    return default if size == 0 else min(size, most)


def page_token(after: tuple[int, str]) -> str:
    """Opaque to clients: where the next page starts."""
    score, item_id = after
    return base64.urlsafe_b64encode(f"{score}:{item_id}".encode()).decode().rstrip("=")


def after_token(raw: str | None, valid_id: Callable[[str], bool]) -> tuple[int, str] | None:
    """Where a page token says to start (None: at the beginning); one this list did not make is a 400."""
    if not raw:
        return None
    try:
        text = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()
        score, _, item_id = text.partition(":")
        if valid_id(item_id):
            return int(score), item_id
    except (binascii.Error, ValueError):
        pass
    raise InvalidArgument("not a page token of this list (pass next_page_token as it came)", "page_token")
