"""The "invariants" panel: three ways to hand a scan body an input that does not change, their
results, jaxprs and memory, and the rule for a closed-over learning rate."""

from __future__ import annotations

import ipywidgets as ipw
import numpy as np
import plotly.graph_objects as go

import core
from core import strategies
from core.shown import shown
from widgets.batch import batched, or_unbatched
from widgets.chart import base_layout
from widgets.code import code_view
from widgets.hood.common import (
    HOOD_MARGIN,
    PALETTE,
    Range,
    clamped,
    jaxpr_html,
    notices_html,
    ranged,
    watch,
    ways,
)
from widgets.layout import BESIDE

RANGES = {"length": Range(1, 12, 5), "b": Range(-5.0, 5.0, 2.0, step=0.5)}
"""The controls' ranges, read by the sliders and by the clamp of every value a visitor sends."""

_WHERE = {
    "scanned input": "a <b>scanned input</b>: a length-N array built before the loop, one element a step",
    "carry": "part of the <b>carry</b>",
    "constant": "a <b>constant of the loop</b> (<code>num_consts=1</code>): one value, read every step",
}
_NOTES = {
    "duplicate": "b repeated N times and scanned with a.",
    "carry": "b carried along unchanged. JAX sees the carry never changes and passes it as a loop "
    "constant, exactly as for the closure.",
    "closure": "the body closes over b: the cleanest of the three.",
}
MEMORY_LENGTHS = 10 ** np.arange(1, 8)
# On the worked example's data: monotone below 0.25, oscillating above.
LR_DEMO = (0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3)


class InvariantsPanel:
    """The three ways to hand a scan an input that does not change, side by side for
    a = arange(len), b, with their jaxprs; what duplication costs as the sequence grows; one trace
    for many closed-over learning rates."""

    def __init__(self, figure, beside: str = BESIDE, batch=None, code: bool = True):
        del beside  # its one chart has a row to itself; taken as every panel takes it (UnderTheHood)
        self.batch = or_unbatched(batch)  # a move's changes go to the page as one message
        self.length = ranged(
            ipw.IntSlider, RANGES["length"], "len(a)", "a = arange(len(a)), the scanned sequence"
        )
        self.b = ranged(ipw.FloatSlider, RANGES["b"], "b", "the input that does not change across iterations")
        self.notice = ipw.HTML()
        self.results, self.jaxprs, row = ways(_NOTES, strategies.FUNCTIONS)
        memory = core.strategy_memory(MEMORY_LENGTHS)
        self.memory = memory
        self.memory_figure = figure(
            data=[
                go.Scatter(
                    x=memory.lengths,
                    y=memory.temp_bytes[name],
                    name=name,
                    mode="lines+markers",
                    line={"color": PALETTE[i], "width": 2, "dash": "dot" if name == "carry" else "solid"},
                    hovertemplate="N = %{x:,}<br>%{y:,} bytes<extra>" + name + "</extra>",
                )
                for i, name in enumerate(core.STRATEGIES)
            ],
            layout=base_layout(
                "Working memory of the compiled scan, float32 a and scalar b<br><sup>XLA's "
                "memory_analysis().temp_size_in_bytes; carry and closure overlap</sup>",
                "sequence length N",
                "temporary bytes",
                "log",
                margin=HOOD_MARGIN,
                xaxis={"title": {"text": "sequence length N"}, "type": "log"},
            ),
        )
        self.lr_rule = ipw.HTML(self._lr_text())
        self.widget = ipw.VBox(
            [
                ipw.HBox([self.length, self.b]),
                self.notice,
                row,
                self.memory_figure,
                self.lr_rule,
                *([code_view(shown("closed_over_lr"))] if code else []),
            ]
        )
        watch((self.length, self.b), self._update)
        self._update()

    @staticmethod
    def _lr_text() -> str:
        x = np.ones((2, 2), np.float32)  # the worked example's batches
        traces = core.lr_traces(LR_DEMO, x, x)
        rows = "".join(
            f"<tr><td>{lr:g}</td><td>{w:.6g}</td></tr>"
            for lr, w in zip(traces.lrs, traces.weights, strict=True)
        )
        return (
            "<h4>A learning rate closed over by the scan body is still traced</h4>"
            "<p>The body can read <code>lr</code> from the enclosing function, so it need not be "
            "in the carry; and closing over it does not make it a static argument of the jitted function. "
            f"<code>jax.jit(closed_over_lr)</code> ran at these {len(LR_DEMO)} learning rates on the "
            f"worked example's two batches of ones: <b>{traces.traces_traced} trace</b> with lr traced, "
            "against "
            f"<b>{traces.traces_static} traces</b> (and as many compiles) with "
            '<code>static_argnames="lr"</code>.</p>'
            f'<table style="border-collapse: collapse"><tr><th>lr</th><th>final w</th></tr>{rows}</table>'
        )

    def _read(self) -> tuple[int, float, list]:
        """(len(a), b, notices): the controls clamped to RANGES, a notice (or None) for each."""
        length, first = clamped(self.length, RANGES["length"])
        b, second = clamped(self.b, RANGES["b"])
        return int(length), b, [first, second]

    @batched
    def _update(self, change=None) -> None:
        length, b, notices = self._read()
        self.notice.value = notices_html(notices)
        a = np.arange(length, dtype=np.float32)
        results = core.invariant_strategies(a, b)
        for name, (total, per_step) in results.items():
            where = core.where_b_lives(name, a, b)
            values = " ".join(f"{v:g}" for v in np.asarray(per_step).tolist())
            self.results[
                name
            ].value = (
                f"<p>total = <b>{float(total):g}</b>, per step = [{values}]<br>b is {_WHERE[where]}.</p>"
            )
            self.jaxprs[name].value = jaxpr_html(core.strategy_jaxpr(name, a, b))


__all__ = ["LR_DEMO", "MEMORY_LENGTHS", "RANGES", "InvariantsPanel"]
