"""The server keys that seal webhook secrets: from IX_WEBHOOK_KEYS, or a key file made once (issue 14)."""

from __future__ import annotations

import base64
import logging
import os
import stat
import threading
from pathlib import Path

import pytest

from server import settings as settings_module
from server.config_errors import ConfigError
from server.settings import Settings
from server.webhooks import server_keys


def _settings(data_dir: Path) -> Settings:
    return settings_module.load({"IX_DATA_DIR": str(data_dir)})


def _key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def test_the_variable_gives_the_keys_current_first(tmp_path: Path) -> None:
    first, second = _key(), _key()
    keys = server_keys.load(_settings(tmp_path), {"IX_WEBHOOK_KEYS": f"{first}, {second}"})
    assert keys == [base64.b64decode(first), base64.b64decode(second)]
    # no key file is made when the variable is set
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "bad",
    [
        "not base64!",
        base64.b64encode(b"too short").decode(),
        base64.b64encode(bytes(range(33))).decode(),  # one byte too many
        "",  # an empty entry between commas
    ],
)
def test_a_malformed_key_is_a_config_error_without_its_value(tmp_path: Path, bad: str) -> None:
    value = f"{_key()},{bad}"
    with pytest.raises(ConfigError) as raised:
        server_keys.load(_settings(tmp_path), {"IX_WEBHOOK_KEYS": value})
    message = str(raised.value)
    assert "IX_WEBHOOK_KEYS" in message and "key 2" in message
    assert value.split(",")[0] not in message
    if bad:
        assert bad not in message


def test_without_the_variable_a_key_file_is_made_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = _settings(tmp_path / "data")
    with caplog.at_level(logging.WARNING, logger=server_keys.__name__):
        first = server_keys.load(settings, {})
        again = server_keys.load(settings, {})
    assert first == again and len(first) == 1 and len(first[0]) == 32
    path = tmp_path / "data" / settings.webhooks.key_file
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert base64.b64decode(path.read_text().strip()) == first[0]
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 1 and "IX_WEBHOOK_KEYS" in warnings[0].getMessage()
    # no draft left behind
    assert sorted(each.name for each in path.parent.iterdir()) == [path.name]


def test_processes_racing_to_make_the_file_read_one_key(tmp_path: Path) -> None:
    path = tmp_path / "race" / "server.key"
    found: list[bytes] = []
    start = threading.Barrier(8)

    def make() -> None:
        start.wait()
        found.append(server_keys.from_file(path))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == 8 and len(set(found)) == 1
    assert [each.name for each in path.parent.iterdir()] == [path.name]


def test_a_broken_key_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "server.key"
    path.write_text("garbage\n")
    with pytest.raises(ConfigError, match=r"server\.key"):
        server_keys.from_file(path)
