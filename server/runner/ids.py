"""New interaction ids: 128 random bits, URL-safe (ids go into paths unencoded, spec §0); and other ids
of the same bits (new_token)."""

from __future__ import annotations

import base64
import os


class _Ids:
    """Random bytes from the OS's CSPRNG, read in blocks: one read per 256 ids instead of one per id."""

    def __init__(self) -> None:
        self._block = b""
        self._at = 0
        # a forked process must not hand out its parent's ids
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._block, self._at = b"", 0

    def __call__(self) -> str:
        return "v1_" + self.token()

    def token(self) -> str:
        """128 random bits, URL-safe, with no prefix."""
        if self._at >= len(self._block):
            self._block, self._at = os.urandom(16 * 256), 0
        raw = self._block[self._at : self._at + 16]
        self._at += 16
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


new_id = _Ids()
#: the id of what is not an interaction (a generateContent's `responseId`), from the same blocks
new_token = new_id.token
