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

Its kernel spec also declares CurveZMQ support (`metadata.supported_encryption`): with make run's
`KernelManager.transport_encryption=auto`, jupyter_client gives each kernel keys of its own, and its
sockets are encrypted rather than open to every user of the machine (ipykernel warned "Kernel is
running over TCP without encryption" at every start).

Together they keep a dashboard kernel under its 250 MB target (docs/performance.md: what each
saved). JupyterLab (`make lab`), Binder and JupyterHub keep the stock kernel, with its debugger and
docstrings.
"""

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
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
