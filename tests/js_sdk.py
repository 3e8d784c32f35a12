"""The official JS SDKs against a server: a node script of tests/js/ (ESM, one per scenario) run with its
settings as one JSON argument, its answer read back as the JSON line it prints.

The SDKs are those of tests/js/package-lock.json (`openai`, `@google/genai`), installed into
tests/js/node_modules by `make js-sdks`, which `make test` runs; `IX_NODE` names another node binary. An
error an SDK throws is part of the answer (`{"thrown": {"name", "status", "message", "error"}}`,
tests/js/common.mjs) so that a test can read it; a script that crashes or outlives its timeout fails the test
with its stderr.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import pytest

from .support import ROOT

JS = ROOT / "tests" / "js"
#: written by `make js-sdks` once `npm ci` installed the locked packages
INSTALLED = JS / "node_modules" / ".installed"
NODE = os.environ.get("IX_NODE", "node")
#: an SDK's own variables in the test process's environment would change what it sends
_SDK_VARIABLES = ("OPENAI_", "GEMINI_", "GOOGLE_")


def _environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if not name.startswith(_SDK_VARIABLES)}


def run(script: str, settings: dict[str, Any], timeout: float = 60) -> Any:
    """What tests/js/`script` answers with `settings`."""
    node = shutil.which(NODE)
    if node is None or not INSTALLED.exists():
        # not a skip: `make test` installs both, and a suite that skipped them would pass untested
        pytest.fail(f"the JS SDKs are not installed (node: {node}): `make js-sdks` installs them")
    try:
        done = subprocess.run(
            [node, str(JS / script), json.dumps(settings)],
            cwd=JS,
            env=_environment(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        raise AssertionError(f"{script} ran past {timeout:g} s; its stderr:\n{expired.stderr!r}") from None
    if done.returncode != 0 or not done.stdout.strip():
        raise AssertionError(f"{script} exited {done.returncode}; its stderr:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])
