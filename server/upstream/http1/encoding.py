"""A compressed response body, decoded as it streams. We ask for none (`accept-encoding: identity`), but a
server may compress anyway: gzip, zlib-wrapped deflate and the raw deflate many servers send under that name
are read; anything else is refused by name."""

from __future__ import annotations

import zlib

from .errors import ConnectionBroken

_COMPRESSED = ("gzip", "x-gzip", "deflate")


class BodyDecoder:
    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib, told apart by the header
        #: "deflate" without the zlib header is raw deflate: tried once the header proves wrong
        self._raw_allowed = encoding == "deflate"
        self._produced = False

    def decode(self, chunk: bytes) -> bytes:
        try:
            out = self._zlib.decompress(chunk)
        except zlib.error as exc:
            if not (self._raw_allowed and not self._produced):
                raise ConnectionBroken(f"the upstream's {self.encoding} body is corrupt: {exc}") from None
            self._raw_allowed = False
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            return self.decode(chunk)
        self._produced = self._produced or bool(out)
        return out

    def finish(self) -> bytes:
        """What the decompressor still holds once the body has ended."""
        try:
            return self._zlib.flush()
        except zlib.error as exc:
            raise ConnectionBroken(f"the upstream's {self.encoding} body is corrupt: {exc}") from None


def decoder_for(encoding: str) -> BodyDecoder | None:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in _COMPRESSED:
        return BodyDecoder(encoding)
    raise ConnectionBroken(f"the upstream answered in an unsupported content-encoding {encoding!r}")
