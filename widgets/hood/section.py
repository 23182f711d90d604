"""The "under the hood" section: one closed accordion per panel of PANELS, each panel built the
first time its accordion is opened."""

from __future__ import annotations

import ipywidgets as ipw

from widgets.hood.common import notice
from widgets.hood.invariants import InvariantsPanel
from widgets.hood.loops import LoopsPanel
from widgets.hood.lr import LrPanel
from widgets.hood.optax_panel import OptaxPanel
from widgets.layout import BESIDE
from widgets.surface import surface_maker

PANELS = {
    "invariants": ("Loop-invariant inputs: duplicate, carry or closure", InvariantsPanel),
    "loops": ("Python loop vs lax.scan vs unrolled jit: compile and run time", LoopsPanel),
    "optax": ("Pytree parameters and Optax optimizers", OptaxPanel),
    "lr": ("Where the learning rate lives: closed over, scanned or in the carry", LrPanel),
}
"""name -> (the section's title, the panel's class), in the page's order."""


class UnderTheHood:
    """The panels of `PANELS`, each built the first time its accordion is opened: `panels` holds
    the built ones by name. `figure` makes their charts and `beside` is how narrow one may be drawn
    beside another (`side_by_side`: the projector view's charts need more); with `batch` (a
    widgets.batch.Batch on the page), each callback's changes go to the page as one message. With
    `code=False` (a page's `?hide=code`) no panel shows its "Code:" part. With `access`
    (widgets.access.Access), each closed section holds a hidden view of it."""

    def __init__(self, figure=None, beside: str = BESIDE, batch=None, code: bool = True, access=None):
        self._figure = figure or surface_maker()
        self._access = access
        self._beside = beside
        self._batch = batch
        self._code = code
        self.panels: dict = {}
        self.sections: dict = {}

    def show(self, name: str) -> ipw.Accordion:
        """The closed section for panel `name`; opening it builds the panel (a second or two)."""
        if name not in PANELS:
            raise ValueError(f"name must be one of {tuple(PANELS)}, got {name!r}"[:200])
        if name in self.sections:
            return self.sections[name]
        title, _ = PANELS[name]
        placeholder = ipw.HTML("<i>Building the panel…</i>")
        if self._access is not None:  # its output labelled and told to the batch (widgets/access.py)
            placeholder = self._access.hidden_in(ipw.VBox([placeholder]))
        section = ipw.Accordion(children=[placeholder], selected_index=None)
        section.set_title(0, title)
        section.observe(
            lambda change: self._open(name) if change["new"] == 0 else None, names="selected_index"
        )
        self.sections[name] = section
        return section

    def open(self, name: str):
        """Open section `name` (building its panel) and return the panel."""
        self.show(name).selected_index = 0
        return self.panels[name]

    def _open(self, name: str) -> None:
        if name in self.panels:
            return
        section = self.sections[name]
        try:
            panel = PANELS[name][1](self._figure, beside=self._beside, batch=self._batch, code=self._code)
        except Exception as error:  # say so in the section; the rest of the page carries on
            words = f"This panel could not be built ({type(error).__name__}: {str(error)[:200]})."
            section.children = [ipw.HTML(notice(words))]
            return
        self.panels[name] = panel
        section.children = [panel.widget]


__all__ = ["PANELS", "UnderTheHood"]
