"""The dashboard's kernel: ipykernel as `python -m ipykernel_launcher` starts it, without its debugger.

`make run` serves the dashboard with `kernels.DashboardKernelSpecManager`, whose `python3` kernel
(serving/kernelspecs/python3/kernel.json) runs this file under `python -OO`. A dashboard kernel only
runs app.ipynb, and a visitor cannot run code in it (Voila refuses execute requests), so:

- ipykernel's debugger is left out. ipykernel imports debugpy whenever it is installed (it is one of
  ipykernel's dependencies), for a debugger that only JupyterLab's debug panel talks to.
- `-OO` drops docstrings (and asserts) from every Python module the kernel loads: jax, numpy,
  plotly, IPython and the rest. Nothing in the dashboard reads a docstring; `help()` would show
  none. The Makefile compiles the modules for -OO (`compile_oo`): without those files, each kernel
  compiled them from source, about 2 s of CPU.
- When a page asks for the widgets' states, the heap their serialising freed is handed back to the
  system a second later (`trim_after_states`): 6 to 7 MB a kernel.

Its kernel spec also declares CurveZMQ support (`metadata.supported_encryption`): with make run's
`KernelManager.transport_encryption=auto`, jupyter_client gives each kernel keys of its own, and its
sockets are encrypted rather than open to every user of the machine (ipykernel warned "Kernel is
running over TCP without encryption" at every start).

Together they keep a dashboard kernel under its 250 MB target (docs/performance.md: what each
saved). JupyterLab (`make lab`), Binder and JupyterHub keep the stock kernel, with its debugger and
docstrings.
"""

import asyncio
import ctypes
import os
import sys

# Importing a name bound to None in sys.modules raises ImportError, which ipykernel takes as
# "debugpy is not installed" (ipykernel.debugger._is_debugpy_available).
LEFT_OUT = ("debugpy",)


def main() -> None:
    # Run as a script, Python put this file's folder first on sys.path: its modules (kernels, heap,
    # ...) would shadow top-level packages of those names. ipykernel_launcher drops its own entry too;
    # IPython puts the kernel's working folder (the notebook's) on the path for the notebook's code.
    if sys.path and os.path.realpath(sys.path[0]) == os.path.dirname(os.path.realpath(__file__)):
        del sys.path[0]
    for name in LEFT_OUT:
        sys.modules[name] = None
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()  # what kernelapp.launch_new_instance does, with one handler more
    app.initialize()
    trim_after_states(app.kernel)
    app.start()


TRIM_DELAY = 1.0
"""Seconds after a page's request for the widgets' states that the kernel's heap is trimmed: the
reply's message is sent (and its buffers freed) by ipykernel's IOPub thread, after the handler."""


def trim_after_states(kernel) -> None:
    """Hand the heap back to the system (`widgets.heap.return_freed_memory`, the same call) once the
    page has the widgets' states. A page that connects asks for the state of every widget
    (ipywidgets' `request_states`), and serialising them all took 6 to 7 MB, freed once sent, that
    every kernel kept for its whole life (glibc keeps freed memory for reuse). Only that message is
    followed by a trim: the controls' callbacks are not (a trim after each made them fault their
    pages in again, as the mmap threshold did: docs/performance.md)."""
    handle = kernel.shell_handlers["comm_msg"]

    def comm_msg(stream, ident, msg):
        result = handle(stream, ident, msg)
        data = msg.get("content", {}).get("data")
        if isinstance(data, dict) and data.get("method") == "request_states":
            try:
                asyncio.get_running_loop().call_later(TRIM_DELAY, return_freed_memory)
            except RuntimeError:  # no loop in this thread
                return_freed_memory()
        return result  # a handler that is a coroutine function is awaited by the kernel, as before

    kernel.shell_handlers["comm_msg"] = comm_msg


def return_freed_memory() -> None:
    """widgets.heap's, here because importing `widgets` imports the whole dashboard."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    main()
