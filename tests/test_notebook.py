"""app.ipynb runs top to bottom in the dashboard's own kernel (serving/dashboard_kernel.py, what `make
run` starts) and shows the app; tests/test_package.py runs it in a stock kernel."""

from pathlib import Path

import nbformat
from jupyter_client import AsyncKernelManager
from nbclient import NotebookClient
from traitlets import default

from harness.support.kernels import DASHBOARD_KERNEL, KERNEL_PROBE
from serving.kernels import DashboardKernelSpecManager

ROOT = Path(__file__).resolve().parent.parent


class DashboardKernelManager(AsyncKernelManager):
    """Kernels from make run's kernel specs (Voila's kernel_spec_manager_class there)."""

    @default("kernel_spec_manager")
    def _dashboard_specs(self):
        return DashboardKernelSpecManager(data_dir=self.data_dir)


def test_app_notebook_executes_and_displays_a_widget_in_the_dashboards_kernel():
    # The stock kernel's run is tests/test_package.py's, from an installed ScanLab.
    notebook = nbformat.read(ROOT / "app.ipynb", as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(KERNEL_PROBE))
    NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        kernel_manager_class=DashboardKernelManager,
        resources={"metadata": {"path": str(ROOT)}},
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
    [printed] = [o.text for o in notebook.cells[-1].outputs if o.output_type == "stream"]
    assert printed == DASHBOARD_KERNEL
