"""Running wrk (Debian's package) with bench/post.lua, and the server's CPU time over the same interval.

With `api_keys`, the requests take turns among those keys (one tenant each), a request per key in order
(scenario 14: a Cluster spreads tenants, not one tenant's keys, over its nodes)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .procs import children_cpu_seconds, cpu_seconds

LUA = Path(__file__).resolve().parent / "post.lua"


class WrkMissing(RuntimeError):
    pass


def wrk_binary() -> str:
    binary = shutil.which("wrk")
    if binary is None:
        raise WrkMissing("wrk was not found on PATH; install Debian's package: apt-get install -y wrk")
    return binary


@dataclass(frozen=True)
class Pids:
    """The processes whose CPU time a run measures: the server under load, Redis, and the fake upstream
    when it runs apart (scenario 8)."""

    server: list[int]
    redis: list[int]
    upstream: list[int] | None = None


@dataclass
class WrkResult:
    requests: int
    seconds: float
    errors: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    #: CPU time of the server's processes and of Redis over the run, per request
    server_cpu_ms: float
    redis_cpu_ms: float
    #: share of one core used by the server processes, and by wrk itself
    server_cores: float
    loadgen_cores: float
    #: CPU time of the fake upstream's process per request, when it runs apart (scenario 8)
    upstream_cpu_ms: float | None = None

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, float | int]:
        extra = (
            {}
            if self.upstream_cpu_ms is None
            else {"upstream_cpu_ms_per_req": round(self.upstream_cpu_ms, 4)}
        )
        return {
            "rps": round(self.rps, 1),
            "requests": self.requests,
            "seconds": round(self.seconds, 3),
            "errors": self.errors,
            "p50_ms": round(self.p50_ms, 3),
            "p90_ms": round(self.p90_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            "mean_ms": round(self.mean_ms, 3),
            "server_cpu_ms_per_req": round(self.server_cpu_ms, 4),
            "redis_cpu_ms_per_req": round(self.redis_cpu_ms, 4),
            "server_cores": round(self.server_cores, 3),
            "loadgen_cores": round(self.loadgen_cores, 3),
            **extra,
        }


async def run_wrk(
    url: str,
    body: bytes,
    *,
    api_key: str,
    connections: int,
    seconds: float,
    pids: Pids,
    workdir: Path,
    api_keys: Sequence[str] = (),
) -> WrkResult:
    body_file = workdir / "wrk-body.json"
    body_file.write_bytes(body)
    env = {**os.environ, "BENCH_BODY_FILE": str(body_file), "BENCH_API_KEY": api_key}
    if api_keys:
        env["BENCH_API_KEYS"] = ",".join(api_keys)
    args = [
        wrk_binary(),
        "-t1",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "10s",
        "-s",
        str(LUA),
        url,
    ]
    server_before, redis_before = cpu_seconds(pids.server), cpu_seconds(pids.redis)
    upstream_before = cpu_seconds(pids.upstream or [])
    loadgen_before, wall_before = children_cpu_seconds(), time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    wall = time.monotonic() - wall_before
    server_cpu = cpu_seconds(pids.server) - server_before
    redis_cpu = cpu_seconds(pids.redis) - redis_before
    upstream_cpu = cpu_seconds(pids.upstream or []) - upstream_before
    loadgen_cpu = children_cpu_seconds() - loadgen_before
    line = next((ln for ln in out.decode().splitlines() if ln.startswith("BENCH_JSON ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({proc.returncode}): {out.decode()[-2000:]} {err.decode()[-2000:]}")
    data = json.loads(line[len("BENCH_JSON ") :])
    requests = int(data["requests"])
    per = 1000.0 / requests if requests else 0.0
    return WrkResult(
        requests=requests,
        seconds=data["duration_us"] / 1e6,
        errors=sum(int(v) for v in data["errors"].values()),
        p50_ms=data["p50_us"] / 1000,
        p90_ms=data["p90_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        mean_ms=data["mean_us"] / 1000,
        server_cpu_ms=server_cpu * per,
        redis_cpu_ms=redis_cpu * per,
        server_cores=server_cpu / wall,
        loadgen_cores=loadgen_cpu / wall,
        upstream_cpu_ms=None if pids.upstream is None else upstream_cpu * per,
    )


def pooled(results: Sequence[WrkResult]) -> dict[str, Any]:
    """Runs of one path as one: requests, their rate and CPU (the server's, Redis's) over all the runs
    (scenarios 10, 17, 18, 23)."""
    requests = sum(r.requests for r in results)
    seconds = sum(r.seconds for r in results)
    cpu_ms = sum(r.server_cpu_ms * r.requests for r in results)
    redis_ms = sum(r.redis_cpu_ms * r.requests for r in results)
    return {
        "requests": requests,
        "rps": round(requests / seconds, 1) if seconds else None,
        "server_cpu_ms_per_req": round(cpu_ms / requests, 4) if requests else None,
        "redis_cpu_ms_per_req": round(redis_ms / requests, 4) if requests else None,
        "p50_ms": round(statistics.median(r.p50_ms for r in results), 3),
        "p99_ms": round(statistics.median(r.p99_ms for r in results), 3),
        "errors": sum(r.errors for r in results),
        "runs_cpu_ms_per_req": [round(r.server_cpu_ms, 4) for r in results],
    }
