"""At most `max_kernels` kernels at once, the preheated one included; the dashboard's own kernel; the
moment the preheated pool is ready, in words."""

import asyncio
import os
import time

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado import web
from traitlets import Integer
from voila.request_info_handler import RequestInfoSocketHandler
from voila.utils import ENV_VARIABLE

READY_POLL_S = 0.5


class CappedKernelManager(AsyncMappingKernelManager):
    """jupyter_server's kernel manager, refusing to start a kernel once `max_kernels` are running or
    starting.

    Voila builds its preheating manager (`voila.voila_kernel_manager.VoilaKernelManager`) on top of
    the configured `VoilaConfiguration.multi_kernel_manager_class`, so every kernel starts through
    `start_kernel` here: the pool's, after a visitor took the preheated kernel, and the page
    handler's, for a visitor who finds the pool empty. At the cap both raise HTTP 503. Voila's page
    handler has sent nothing yet at that point, so the visitor gets the template's `503.html` ("busy,
    try again in a minute") and no kernel starts. A refused refill also leaves the pool, or the next
    visitor would wait for it until someone leaves instead of being told; the pool is filled again
    whenever a kernel stops.
    """

    max_kernels = Integer(
        40,
        min=1,
        help="The most kernels running at once, the preheated ones included; over it, a visitor gets 503.",
    ).tag(config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._starting: set[str] = set()
        self._closing = False
        # Voila's refills carry the address of the page that took the preheated kernel (the explorer
        # takes the page's scheme from it); refills started here reuse the last one.
        self._request_url: str | None = None
        # Voila builds this manager as its server starts, before its loop runs; the loop is found
        # as VoilaKernelManager.fill_if_needed finds it for the pool's tasks, so both use one.
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
        self._ready_watch = loop.create_task(self._announce_ready(time.monotonic()))

    async def _announce_ready(self, since: float) -> None:
        """Log once, in words, when every preheated kernel waits for its visitor.

        Voila logs "Kernel pool ... is filled" when the pool's kernels have started, but each then
        still runs app.ipynb (imports, the engine, the default view): with 30 of them on two cores
        that line came about 34 s too early for a teacher to let the class in. A preheated kernel
        is ready once it waits inside `wait_for_request`, which it does over a websocket that
        Voila's RequestInfoSocketHandler keeps in `_waiters` until a visitor claims the kernel.
        """
        while True:
            await asyncio.sleep(READY_POLL_S)
            tasks = [task for pool in self._preheat_pools().values() for task in pool]
            if not tasks and not getattr(self, "_pools", None):
                return  # no preheating: nothing to wait for
            kernels = [_kernel_of(task) for task in tasks]
            if tasks and all(k is not None and k in RequestInfoSocketHandler._waiters for k in kernels):
                break
        count, url = len(kernels), getattr(self.parent, "display_url", "")
        self.log.info(
            "The dashboard is ready for %d visitor%s at %s: a preheated kernel waits for each (%.0f s after"
            " the start; later visitors wait a few seconds for a kernel of their own).",
            count, "" if count == 1 else "s", url, time.monotonic() - since,
        )  # fmt: skip

    async def start_kernel(self, *, kernel_id: str | None = None, **kwargs) -> str:
        if kernel_id is not None and kernel_id in self:
            return await super().start_kernel(kernel_id=kernel_id, **kwargs)
        kernel_id = kernel_id or self.new_kernel_id()
        if len(self._starting.union(self.list_kernel_ids())) >= self.max_kernels:
            self._leave_pool(asyncio.current_task())
            raise web.HTTPError(503, "all %d kernels are in use (max_kernels)", self.max_kernels)
        self._request_url = (kwargs.get("env") or {}).get(ENV_VARIABLE.VOILA_REQUEST_URL, self._request_url)
        self._starting.add(kernel_id)
        try:
            return await super().start_kernel(kernel_id=kernel_id, **kwargs)
        finally:
            self._starting.discard(kernel_id)

    def remove_kernel(self, kernel_id: str):
        """Called for every kernel that ends (shut down, culled or dead): refill the pool."""
        manager = super().remove_kernel(kernel_id)
        if not self._closing:
            for notebook, pool in self._preheat_pools().items():
                pool[:] = [task for task in pool if _kernel_of(task) != kernel_id]  # a preheated one died
                extra = {ENV_VARIABLE.VOILA_REQUEST_URL: self._request_url} if self._request_url else {}
                self.fill_if_needed(notebook_name=notebook, extra_kernel_env_variables=extra)
        return manager

    async def shutdown_all(self, now: bool = False) -> None:
        """The server is stopping (Ctrl-C, SIGTERM): every kernel ends, a busy one killed.

        Asked to shut down while a cell runs, ipykernel closes its sockets, and the cell's reply,
        sent when the cell ends, raised ZMQError ("Socket operation on non-socket") with a
        traceback on the terminal. The preheated kernel is always in that state: it waits for its
        visitor inside app.ipynb's first cell (widgets/preheat.py). A busy kernel has nothing to
        save at this point, so it is killed (its process group, as jupyter_client does for
        `now`); the idle ones are asked, as before.
        """
        self._closing = True
        if self._ready_watch is not None:
            self._ready_watch.cancel()
        busy = [kid for kid in self.list_kernel_ids() if self.kernel_model(kid)["execution_state"] == "busy"]
        await asyncio.gather(*(self.shutdown_kernel(kid, now=True) for kid in busy))
        await super().shutdown_all(now=now)

    def _preheat_pools(self) -> dict[str, list[asyncio.Task]]:
        """VoilaKernelManager's `_pools`: per notebook, the tasks that start and render a preheated
        kernel (none without `preheat_kernel`)."""
        return getattr(self, "_pools", {})

    def _leave_pool(self, task: asyncio.Task | None) -> None:
        for pool in self._preheat_pools().values():
            if task in pool:
                self.log.info("Kernel pool refill refused: all %d kernels are in use", self.max_kernels)
                pool.remove(task)
                task.add_done_callback(lambda done: done.cancelled() or done.exception())  # nobody awaits it


def _kernel_of(task: asyncio.Task) -> str | None:
    if not task.done() or task.cancelled() or task.exception() is not None:
        return None
    return task.result().get("kernel_id")


KERNELSPECS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernelspecs")


class DashboardKernelSpecManager(KernelSpecManager):
    """jupyter_client's kernel specs, with serving/kernelspecs searched first: its `python3`, the
    notebook's kernel, runs `dashboard_kernel.py` (ipykernel without its debugger, under -OO)."""

    def _kernel_dirs_default(self) -> list[str]:
        return [KERNELSPECS, *super()._kernel_dirs_default()]
