"""ScanLab's user interface: controls and Plotly figures over `core`."""

from widgets.trajectory import RunSettings, build_app, compute_run, run_summary, trajectory_figure

__all__ = ["RunSettings", "build_app", "compute_run", "run_summary", "trajectory_figure"]
