"""The backend's name."""

from __future__ import annotations

#: the backend kind in models.toml, and the name native data is sealed with when no other is given
KIND = "interactions"
