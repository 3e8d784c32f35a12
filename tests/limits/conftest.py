"""The limits tests' fixtures: the shared server's server.toml, which they edit as an operator would."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import Served
from ..inproc import ThreadedApp
from ..support import Stack


@pytest.fixture
def server_config(server: Served) -> Path:
    """The server.toml the shared server (and its workers) read."""
    if isinstance(server, Stack):
        return server.config_path
    assert isinstance(server, ThreadedApp)
    return server.app.settings.config_file
