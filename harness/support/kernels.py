"""What a kernel that ran app.ipynb says of itself (tests/test_notebook.py: the dashboard's kernel;
tests/test_package.py: a stock kernel of an installed ScanLab).

KERNEL_PROBE, a code cell, prints: the optimisation level (-OO drops docstrings), whether debugpy
imports and ipykernel's debugger can use it, core.moments' docstring, whether serving/ is on the
path, and whether the big packages load compiled (under -OO Python reads only *.opt-2.pyc, which
the Makefile writes)."""

KERNEL_PROBE = """
import os, sys, core, ipykernel.debugger
try:
    import debugpy
    debugger = "debugpy imported"
except ImportError:
    debugger = "no debugpy"
compiled = all(os.path.isfile(sys.modules[m].__cached__) for m in ("jax", "numpy", "plotly", "ipykernel"))
print(sys.flags.optimize, debugger, ipykernel.debugger._is_debugpy_available, core.moments.__doc__,
      any(p.rstrip("/").endswith("serving") for p in sys.path), compiled)
"""

DASHBOARD_KERNEL = "2 no debugpy False None False True\n"
"""KERNEL_PROBE in make run's kernel: docstrings dropped (-OO), no debugger, serving/ not on the path."""

STOCK_KERNEL = ("0 debugpy imported True The per-batch sums", " False True\n")
"""The start and end of KERNEL_PROBE in a stock kernel (JupyterLab's)."""
