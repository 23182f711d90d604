"""app.ipynb runs top to bottom in a fresh kernel and shows the app: the stock kernel (JupyterLab's)
and the dashboard's own (serving/dashboard_kernel.py, what `make run` starts)."""

from pathlib import Path

import nbformat
import pytest
from jupyter_client import AsyncKernelManager
from nbclient import NotebookClient
from traitlets import default

from serving.kernels import DashboardKernelSpecManager

ROOT = Path(__file__).resolve().parent.parent


class DashboardKernelManager(AsyncKernelManager):
    """Kernels from make run's kernel specs (Voila's kernel_spec_manager_class there)."""

    @default("kernel_spec_manager")
    def _dashboard_specs(self):
        return DashboardKernelSpecManager(data_dir=self.data_dir)


# What the dashboard kernel leaves out, seen from the notebook's own code.
# And its modules load compiled: under -OO, Python reads only *.opt-2.pyc, which the Makefile writes.
PROBE = """
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


@pytest.mark.parametrize("dashboard", [False, True], ids=["stock kernel", "dashboard kernel"])
def test_app_notebook_executes_and_displays_a_widget(dashboard):
    notebook = nbformat.read(ROOT / "app.ipynb", as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(PROBE))
    NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        kernel_manager_class=DashboardKernelManager if dashboard else AsyncKernelManager,
        resources={"metadata": {"path": str(ROOT)}},
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
    [printed] = [o.text for o in notebook.cells[-1].outputs if o.output_type == "stream"]
    if dashboard:  # docstrings dropped (-OO), no debugger, serving/ not on the path
        assert printed == "2 no debugpy False None False True\n"
    else:
        assert printed.startswith("0 debugpy imported True The per-batch sums")
        assert printed.endswith(" False True\n")
