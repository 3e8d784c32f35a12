"""`python -m workers`: a worker process against REDIS_URL. SIGTERM/SIGINT shut it down gracefully."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal

from server import settings as settings_module
from server.runtime import Runtime

from .host import WorkerHost


async def main() -> None:
    settings = settings_module.load()
    runtime = await Runtime.open(settings)
    host = WorkerHost(runtime)
    host.start()
    # what is built so far lives as long as the process: keep it out of the collector's full passes
    gc.freeze()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    logging.getLogger("workers").info("worker ready (queue %s)", settings.worker.queue_name)
    await stop.wait()
    await host.stop()
    await runtime.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # arq logs every job at INFO
    logging.getLogger("arq").setLevel(logging.WARNING)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main())
