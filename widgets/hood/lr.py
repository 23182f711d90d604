"""The "lr" panel: where a scan's learning rate lives (closed over, scanned with the batches, or
derived from Optax's step count in the carry), each loop with its code, numbers and jaxpr."""

from __future__ import annotations

import ipywidgets as ipw
import numpy as np

import core
from core import strategies
from widgets.batch import batched, or_unbatched
from widgets.hood.common import Range, clamped, jaxpr_html, notices_html, ranged, watch, ways
from widgets.layout import BESIDE

RANGES = {"lr": Range(0.01, 0.3, 0.1, step=0.01), "steps": Range(2, 8, 5)}
"""The controls' ranges, read by the sliders and by the clamp of every value a visitor sends."""

_LR_NOTES = {
    "closed over": "A constant lr: the step reads it from the enclosing function.",
    "scanned": "A schedule known before the loop (Optax's exponential decay, evaluated for each step): "
    "N rates scanned with the batches, step k reading lrs[k].",
    "carry": "The same schedule inside Optax: the carry is (w, opt_state), and the state's step count "
    "gives each step's rate.",
}
_LR_WHERE = {
    "constant": "a <b>constant of the loop</b> (<code>num_consts</code>): one value, read every step",
    "scanned input": "a <b>scanned input</b>: one rate per step, beside the batches",
    "carry": "computed from an int32 step count in the <b>carry</b>, which the step advances",
}


class LrPanel:
    """Where a scan's learning rate lives: closed over (constant), scanned with the batches (a
    schedule) or derived from Optax's step count in the carry, on the worked example's batches of
    ones, with each loop's code, its numbers, what its jaxpr says and the jaxpr itself."""

    def __init__(self, figure, beside: str = BESIDE, batch=None, code: bool = True):
        del figure, beside, code  # no chart or code here; taken as every panel takes them (UnderTheHood)
        self.batch = or_unbatched(batch)
        self.lr = ranged(
            ipw.FloatSlider, RANGES["lr"], "lr", "the constant rate, and where the schedules start"
        )
        self.steps = ranged(ipw.IntSlider, RANGES["steps"], "N", "steps: batches of two ones each")
        self.notice = ipw.HTML()
        self.results, self.jaxprs, row = ways(_LR_NOTES, strategies.LR_FUNCTIONS)
        self.widget = ipw.VBox(
            [
                ipw.HBox([self.lr, self.steps]),
                self.notice,
                row,
            ]
        )
        watch((self.lr, self.steps), self._update)
        self._update()

    def _read(self) -> tuple[float, int, list]:
        """(lr, N, notices): the controls clamped to RANGES, a notice (or None) for each."""
        lr, first = clamped(self.lr, RANGES["lr"])
        steps, second = clamped(self.steps, RANGES["steps"])
        return lr, int(steps), [first, second]

    @batched
    def _update(self, change=None) -> None:
        lr, steps, notices = self._read()
        self.notice.value = notices_html(notices)
        x = np.ones((steps, 2), np.float32)  # the worked example's batches, N of them
        for name, place in core.lr_places(0.0, lr, x, x).items():
            values = ", ".join(f"{v:.4g}" for v in place.weights.tolist())
            self.results[name].value = (
                f"<p>final w = <b>{place.final_w:.6g}</b>, w after each step = [{values}]<br>"
                f"lr is {_LR_WHERE[place.where]}.</p>"
            )
            self.jaxprs[name].value = jaxpr_html(place.jaxpr)


__all__ = ["RANGES", "LrPanel"]
