"""`python -m bench` (what `make bench` runs): the scenarios of issues 6, 12 and 13, and of the store.

It starts, on loopback only: a private redis-server on a free port, the production server (`python -m server`,
granian) with REDIS_URL set, worker processes (`python -m workers`), the baseline (`python -m
bench.baseline_app`, served the same way) and a fake OpenAI-compatible upstream inside this process;
scenarios 6, 8, 10 and 20 add a fake upstream in a process of its own, scenario 6 a server of its own,
scenario 9 more idle workers, scenario 10 two servers of its own (metrics and the access log on, and off),
scenario 13 a replica of the Redis and two servers of its own (`[store] replica_acks` 0 and 1), scenario 14 a
3-node Redis Cluster and two servers of its own (on the stack's Redis, and on the Cluster), scenario 19 a
second server of ours with a worker and a Redis of its own (the upstream of remote runs). It stops all of
them at the end, and writes bench/results/latest.json and the tables into bench/README.md.

    python -m bench                      # the default run (about 6 minutes, at most 10)
    python -m bench --all                # every scenario (about a quarter of an hour)
    python -m bench --quick              # a smoke run (well under a minute); writes results/quick.json only
    python -m bench --web-processes 2 --workers 2
    python -m bench --only create,chain  # some scenarios
    python -m bench --profile            # py-spy flame graphs of the web process per scenario (slows it)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from server.launch.redis_process import free_port

from . import report
from .models import models_toml, upstream_scripts
from .procs import ROOT, Stack, WebServer
from .scenarios import DEFAULT, SCENARIOS, Bench, Plan
from .upstream import BenchUpstream
from .wrk import WrkMissing, wrk_binary

RESULTS = Path(__file__).resolve().parent / "results"
#: the whole run, start to end; a scenario still running then is stopped and reported as not finished. The
#: default run (`make bench`) keeps within ten minutes whatever the machine's load; `--all` and `--only`
#: run what they were asked for (everything takes about a quarter of an hour)
BUDGET_SECONDS = 570.0
ALL_BUDGET_SECONDS = 1500.0
#: no one scenario may take longer than this
SCENARIO_SECONDS = {
    "create": 200.0,
    "chain": 120.0,
    "many_streams": 150.0,
    "upstream": 200.0,
    "idle_workers": 200.0,
    # 10,000 triggers registered, then a minute of 1,000 due (waited for from up to 90 s before it)
    "triggers": 420.0,
    # 6 paired create rounds, then 24 paired floods (about 100 s on a quiet 2-core machine)
    "dialects": 180.0,
    # 12 paired create rounds and 8 Redis windows: about 80 s, a server start beside
    "limits": 150.0,
}
#: the scenarios that measure one web process (and are profiled there)
ONE_PROCESS = ("stream", "many_streams")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__.split("\n\n")[0] if __doc__ else ""
    )
    parser.add_argument("--quick", action="store_true", help="a short smoke run (results/quick.json only)")
    parser.add_argument("--web-processes", type=int, default=1, help="granian workers (server and baseline)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (python -m workers)")
    parser.add_argument("--all", action="store_true", help="every scenario, not only the default run's")
    parser.add_argument("--only", default="", help=f"comma-separated scenarios: {','.join(SCENARIOS)}")
    parser.add_argument("--out", type=Path, help="the JSON file (default results/latest.json or quick.json)")
    parser.add_argument("--no-readme", action="store_true", help="do not update bench/README.md")
    parser.add_argument("--profile", action="store_true", help="py-spy flame graphs in results/profiles/")
    return parser.parse_args(argv)


class Profiler:
    """py-spy on the serving processes of the web server while a scenario runs (SIGINT writes the graph)."""

    def __init__(self, enabled: bool, directory: Path) -> None:
        self.enabled = enabled and shutil.which(str(Path(sys.executable).parent / "py-spy")) is not None
        self.directory = directory
        self.procs: list[asyncio.subprocess.Process] = []

    async def start(self, name: str, servers: list[WebServer]) -> None:
        if not self.enabled:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        pids = sorted({pid for server in servers for pid in server.serving_pids()})
        for pid in pids:
            args = [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "--pid",
                str(pid),
                "--rate",
                "250",
                "--nonblocking",
                "-o",
                str(self.directory / f"{name}-{pid}.svg"),
            ]
            self.procs.append(
                await asyncio.create_subprocess_exec(
                    *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
                )
            )

    async def stop(self) -> None:
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGINT)
        for proc in self.procs:
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        self.procs.clear()


def _chosen(options: argparse.Namespace) -> tuple[str, list[str]]:
    """What runs: the scenarios of `--only` in the order given, all of them (`--all`, and `--quick`'s smoke
    run), or the default run's; with the run's name."""
    only = [name.strip() for name in options.only.split(",") if name.strip()]
    if only:
        selection, chosen = "only", only
    elif options.all or options.quick:
        selection, chosen = "all", list(SCENARIOS)
    else:
        selection, chosen = "default", list(DEFAULT)
    unknown = [name for name in chosen if name not in SCENARIOS]
    if unknown:
        raise SystemExit(f"unknown scenarios: {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    return selection, chosen


async def _start(
    options: argparse.Namespace, plan: Plan, stack: Stack, upstream: BenchUpstream, chosen: list[str]
) -> Bench:
    """Redis, the workers, the server and the baseline, and a Redis client: what the scenarios share."""
    web, workers = options.web_processes, options.workers
    print(f"bench: starting redis, server and baseline ({web} web), {workers} worker(s)", flush=True)
    stack.start_redis()
    # workers first: a web server is ready only once some worker consumes the queue
    for index in range(options.workers):
        await stack.start_worker(f"worker-{index}")
    server = await stack.start_server("server", options.web_processes)
    baseline = await stack.start_baseline("baseline", options.web_processes)
    # scenarios 5 and 6 measure one web process: with more, they get a server and a baseline of their own
    one_server, one_baseline = server, baseline
    if options.web_processes != 1 and set(ONE_PROCESS) & set(chosen):
        one_server = await stack.start_server("server-one", 1)
        one_baseline = await stack.start_baseline("baseline-one", 1)
    redis = Redis.from_url(stack.redis_url)
    return Bench(
        plan=plan,
        stack=stack,
        server=server,
        baseline=baseline,
        one_server=one_server,
        one_baseline=one_baseline,
        upstream=upstream,
        redis=redis,
        workdir=stack.workdir,
    )


async def _scenario(name: str, bench: Bench, profiler: Profiler, remaining: float) -> dict[str, Any]:
    """One scenario within its time limit; what stopped it, if anything, is its result (the run goes on)."""
    print(f"bench: {name} ...", flush=True)
    began = time.monotonic()
    servers = [bench.one_server] if name in ONE_PROCESS else [bench.server]
    await profiler.start(name, servers)
    result: dict[str, Any]
    try:
        async with asyncio.timeout(min(SCENARIO_SECONDS.get(name, 90.0), remaining)):
            result = await SCENARIOS[name](bench)
    except TimeoutError:
        result = {"error": "did not finish within its time limit"}
    except Exception as exc:
        result = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        await profiler.stop()
    result["scenario_seconds"] = round(time.monotonic() - began, 1)
    print(f"bench: {name} done in {time.monotonic() - began:.1f} s", flush=True)
    return result


async def _scenarios(
    chosen: list[str], bench: Bench, profiler: Profiler, started: float, budget: float
) -> dict[str, Any]:
    """The chosen scenarios one after the other, within the run's budget; a dead process ends the run, as
    every figure after it would be wrong."""
    results: dict[str, Any] = {}
    for name in chosen:
        remaining = budget - (time.monotonic() - started)
        if remaining < 10:
            results[name] = {"error": "skipped: the time budget of the run was used up"}
            continue
        results[name] = await _scenario(name, bench, profiler, remaining)
        dead = [child for child in bench.stack.children if not child.alive()]
        if dead:
            results["stack"] = {
                "error": f"{dead[0].name} died; see bench/results/processes/{dead[0].name}.log"
            }
            break
    return results


async def run(options: argparse.Namespace) -> dict[str, Any]:
    plan = Plan.quick_plan() if options.quick else Plan.full()
    selection, chosen = _chosen(options)
    budget = BUDGET_SECONDS if selection == "default" else ALL_BUDGET_SECONDS
    started = time.monotonic()
    workdir = RESULTS / "processes"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    upstream = BenchUpstream(upstream_scripts(plan))
    await upstream.start()
    remote_port, back_port = free_port(), free_port()
    models = models_toml(upstream.base_url, remote_port, back_port)
    stack = Stack(workdir, models, upstream.chat_url, remote_port, back_port)
    bench: Bench | None = None
    profiler = Profiler(options.profile, RESULTS / "profiles")
    try:
        bench = await _start(options, plan, stack, upstream, chosen)
        results = await _scenarios(chosen, bench, profiler, started, budget)
    finally:
        if bench is not None:
            await bench.redis.aclose()
        stack.stop()
        await upstream.stop()
    run_data = {
        "quick": plan.quick,
        "selection": selection,
        "scenarios": chosen,
        "seconds": round(time.monotonic() - started, 1),
        "web_processes": options.web_processes,
        "workers": options.workers,
        "machine": report.machine(),
        "plan": plan.__dict__,
        "results": results,
    }
    run_data["targets"] = report.targets(results)
    return run_data


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    try:
        wrk_binary()
    except WrkMissing as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    # 1,000 streams hold thousands of sockets in this process and in the server (which inherits this limit)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    sys.path.insert(0, str(ROOT))
    try:
        import uvloop

        run_data = uvloop.run(run(options))
    except ImportError:
        run_data = asyncio.run(run(options))
    table = report.markdown(run_data)
    out = options.out or RESULTS / ("quick.json" if options.quick else "latest.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(run_data, indent=2) + "\n")
    if not options.quick and not options.no_readme:
        report.update_readme(table)
    print()
    print(table)
    print(f"bench: results in {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    # a missed target is a finding, not a failure; a scenario that could not run is
    return 1 if any("error" in v for v in run_data["results"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
