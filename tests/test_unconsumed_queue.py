"""EMBEDDED_WORKER=0 and no worker: a background create answers, and its run waits. The web process says so
in its log, once however many creates wait, and once more when a worker comes (store/heartbeats.py:
Unconsumed). As the README starts it: `EMBEDDED_WORKER=0 make run` on your own Redis, then `make worker`."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from .support import TOPOLOGIES, Stack, new_key
from .waiting import until

PATH = "/v1beta/interactions"
WARNING = "no worker consumes it"


def test_background_work_with_no_worker_is_said_once_in_the_log(tmp_path: Path) -> None:
    stack = Stack(tmp_path / "stack", topology=TOPOLOGIES["tcp-workers"])
    try:
        stack.start_redis()
        stack.start_server()
        web = stack.servers[0][0]
        headers = {"x-goog-api-key": new_key()}
        body = {"model": "echo", "input": "hi", "background": True}
        with httpx.Client(base_url=stack.url, headers=headers, timeout=10) as client:
            first = client.post(PATH, json=body)
            assert first.status_code == 200, first.text
            until(lambda: WARNING in web.log(), timeout=15)
            for _ in range(3):
                assert client.post(PATH, json=body).status_code == 200
            time.sleep(2.0)  # several of the watch's rounds (a heartbeat apart: 0.5 s here)
            assert web.log().count(WARNING) == 1, web.log()
            stack.start_worker()
            until(lambda: "a worker consumes the queue" in web.log(), timeout=15)
            until(
                lambda: client.get(f"{PATH}/{first.json()['id']}").json()["status"] == "completed", timeout=15
            )
        assert web.log().count(WARNING) == 1
    finally:
        stack.stop()
