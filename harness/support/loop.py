"""An event loop for protocol sessions in synchronous tests (the server itself: harness.server.Server).

    loop = Loop()
    session = loop.run(Session.open(server.url), timeout=240)

`Loop` runs harness.protocol's coroutines from synchronous tests on one event loop, so a Session opened
in a module fixture stays usable across tests; `close()` ends the loop's tasks and closes it.
"""

from __future__ import annotations

import asyncio
import threading


class Loop:
    """One asyncio event loop, on a thread of its own, for a test module: `run(coroutine)` runs a
    coroutine there and returns its result. Its own thread keeps it apart from the loop Playwright's
    sync API runs in the test's thread."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="protocol-loop", daemon=True)
        self._thread.start()

    def run(self, coroutine, timeout: float | None = None):
        if timeout is not None:
            coroutine = asyncio.wait_for(coroutine, timeout)
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def close(self) -> None:
        async def finish():
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.loop.shutdown_asyncgens()
            await self.loop.shutdown_default_executor()

        asyncio.run_coroutine_threadsafe(finish(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()
