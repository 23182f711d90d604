"""The explorer: controls, the five charts, step-by-step playback, URL state and a share link.

Callbacks do no maths: they read the controls through `sanitize`, ask `Model` (which asks `core`)
for a result, and write it into the charts (`widgets.surface.send`), one message for them all
(`widgets.batch`).
A view change (which loss is shown) or a playback step reuses the last result.
"""

from __future__ import annotations

import base64
import contextlib
import html
import inspect
import math
import os
from urllib.parse import urlsplit, urlunsplit

import ipywidgets as ipw
import jax
import numpy as np

from core import lesson, stability, theory, training
from widgets.access import Access
from widgets.batch import Batch, batched
from widgets.code import code_view
from widgets.controls import Choice, LogSlider, Menu, pin
from widgets.export import CSV_HEADER, charts_html, download_link, file_stem, run_csv
from widgets.figures import CHARTS, LOSSES, RANGE_PAD, first_shown, run_name, shown
from widgets.heap import return_freed_memory
from widgets.hood import UnderTheHood
from widgets.layout import BESIDE, BESIDE_PROJECTOR, side_by_side
from widgets.model import Model, Result, overlaid
from widgets.preheat import wait_for_request
from widgets.projector import enlarge
from widgets.script import FILENAME, training_script
from widgets.settings import (
    CHOICES,
    DEFAULT_PRESENTATION,
    DEFAULTS,
    PRESETS,
    RANGES,
    Presentation,
    Settings,
    from_query,
    presentation_from_query,
    sanitize,
    to_query,
)
from widgets.stability import StabilityPanel
from widgets.surface import plain_text, plotly_url, send, surface_maker

REGIME_WORDS = {
    "stalled": "not moving (lr = 0 or every x is 0)",
    # The regimes are those of the step factors (core.regime). With noisy data each batch has its own
    # optimum, so w may still cross w* while no step overshoots its own batch's optimum.
    "monotone": "converging, no step overshooting its batch's optimum",
    "oscillating": "converging, with steps that overshoot their batch's optimum",
    "two-cycle": "a steady two-cycle, bouncing between two values",
    "diverging": "diverging",
}

_STYLE = """
.scanlab-controls { position: sticky; top: 0; z-index: 20; background: var(--jp-layout-color0, #fff);
  border-bottom: 1px solid #ddd; padding: 4px 0 6px 0; }
.scanlab-notice { color: #8a3b00; }
.scanlab-status { font-size: 1.05em; }
.scanlab-caption { font-size: 13px; color: #2a3f5f; padding-left: 60px; }
.scanlab-controls .widget-label { min-width: 3.5em; }
.scanlab-projector, .scanlab-projector .widget-label, .scanlab-projector .widget-readout,
.scanlab-projector button, .scanlab-projector input, .scanlab-projector .widget-html-content,
.scanlab-projector .lm-AccordionPanel-title, .scanlab-projector .scanlab-caption { font-size: 20px; }
.scanlab-projector .widget-slider .noUi-handle { transform: scale(1.4); }
.scanlab-projector .jupyter-button.widget-button,
.scanlab-projector .jupyter-button.widget-toggle-button { width: auto; }
.scanlab-projector .widget-readout { min-width: 4.5em; }
"""
# The notebook's text, larger on a projector page only: this rule is added to that page's style
# (`body` makes it outrank JupyterLab's own `.jp-RenderedHTMLCommon` wherever it loads). As
# `body:has(.scanlab-projector) .jp-RenderedHTMLCommon` on every page, it made Chromium recompute
# the style of every markdown cell whenever a text node changed anywhere in the page (a slider's
# readout at each move: 0.8 to 4 ms of the frame that draws the moved handle, in a trace).
_PROJECTOR_TEXT = "body .jp-RenderedHTMLCommon { --jp-content-font-size1: 18px; font-size: 18px; }\n"


def _labelled(widget, tooltip: str, width: str = "4em", button_width: str = "6.5em"):
    widget.tooltip = tooltip
    widget.style = {"description_width": width}
    if isinstance(widget, ipw.ToggleButtons):
        widget.style.button_width = button_width
    elif isinstance(widget, (ipw.FloatLogSlider, ipw.FloatSlider, ipw.IntSlider)):
        widget.layout.width = "100%"
    return widget


_LONG_LABEL = "6em"  # "optimizer", "momentum", "schedule" in full


def _controls() -> dict:
    """One widget per Settings field, named as the field, each labelled in the lesson's names.
    Bounds come from RANGES, the single source that `sanitize` also enforces."""
    (lr_low, lr_high), (w0_low, w0_high) = RANGES["lr"], RANGES["w0"]
    (true_low, true_high), (noise_low, noise_high) = RANGES["true_w"], RANGES["noise"]
    return {
        "lr": _labelled(
            # No step: a stepped log slider would snap 0.25 to 10**-0.6 = 0.2512 and break the
            # two-cycle preset and shared links; exact values are typed into the readout.
            LogSlider(
                value=DEFAULTS.lr,
                base=10,
                min=math.log10(lr_low),
                max=math.log10(lr_high),
                step=None,
                description="lr",
                readout_format=".4g",
            ),
            f"learning rate, {lr_low:g} to {lr_high:g} (log scale)",
        ),
        "N": _labelled(
            ipw.IntSlider(value=DEFAULTS.N, min=RANGES["N"][0], max=RANGES["N"][1], description="N"),
            "steps: batches",
        ),
        "B": _labelled(
            ipw.IntSlider(value=DEFAULTS.B, min=RANGES["B"][0], max=RANGES["B"][1], description="B"),
            "batch size",
        ),
        "loss": _labelled(
            Choice(options=list(CHOICES["loss"]), value=DEFAULTS.loss, description="loss"),
            "sum((w*x - y)**2) as in the worked example, its mean over the batch, or both overlaid",
        ),
        "w0": _labelled(
            ipw.FloatSlider(value=DEFAULTS.w0, min=w0_low, max=w0_high, step=0.1, description="w0"),
            "initial weight",
        ),
        "true_w": _labelled(
            ipw.FloatSlider(
                value=DEFAULTS.true_w, min=true_low, max=true_high, step=0.1, description="true w"
            ),
            "the slope the data follow: y = true_w * x + noise",
        ),
        "noise": _labelled(
            ipw.FloatSlider(
                value=DEFAULTS.noise, min=noise_low, max=noise_high, step=0.05, description="noise"
            ),
            "standard deviation of the noise added to y",
        ),
        "kind": _labelled(
            Choice(options=list(CHOICES["kind"]), value=DEFAULTS.kind, description="data"),
            "x from a standard normal, or all ones as in the worked example",
        ),
        "seed": _labelled(
            ipw.BoundedIntText(
                value=DEFAULTS.seed,
                min=RANGES["seed"][0],
                max=RANGES["seed"][1],
                description="seed",
                layout={"width": "12em"},
            ),
            "data seed",
        ),
        "optimizer": _labelled(
            Menu(options=list(CHOICES["optimizer"]), value=DEFAULTS.optimizer, description="optimizer"),
            "Optax's optimizer whose run is drawn over plain SGD's: its state rides in the carry",
            _LONG_LABEL,
        ),
        "momentum": _labelled(
            ipw.FloatSlider(
                value=DEFAULTS.momentum,
                min=RANGES["momentum"][0],
                max=RANGES["momentum"][1],
                step=0.01,
                description="momentum",
            ),
            "the momentum of the momentum and nesterov optimizers",
            _LONG_LABEL,
        ),
        "schedule": _labelled(
            Menu(options=list(CHOICES["schedule"]), value=DEFAULTS.schedule, description="schedule"),
            "how the learning rate changes over the N steps; the schedule is scanned with the batches",
            _LONG_LABEL,
        ),
        "map": _labelled(
            Choice(
                options=[("lr × B", "B"), ("lr × momentum", "momentum")],
                value=DEFAULTS.map,
                description="map",
            ),
            "the stability map's rows: batch sizes, or momenta at the current B (heavy-ball momentum)",
            button_width="11em",  # "lr × momentum" in full, in the projector's larger text too
        ),
    }


# The charts that take a row of the page to themselves (widgets.figures.side_by_side), the map included.
WIDE = frozenset({"stability", *(name for name, chart in CHARTS.items() if chart.wide)})

# The core functions behind each chart, shown under it in two closed parts: the loop the lesson
# teaches, which a learner would write (core.lesson; tests/test_lesson.py checks that it gives the
# charts' numbers), then how the explorer makes it fast. The main charts all come from one run of the
# engine's kernel, both losses at once.
LESSON = "Code: the loop the lesson teaches"
FAST = "Code: how the explorer makes it fast"
_LESSON = (lesson.lesson_history, lesson.train_step, lesson.batch_loss)
_ENGINE = (training._history_kernel, training._step, training._batch_loss_and_grad, training._update)
CODE = {
    "trajectory": ((LESSON, _LESSON), (FAST, _ENGINE)),
    "loss": ((LESSON, _LESSON), (FAST, _ENGINE)),
    "landscape": ((LESSON, (*_LESSON, theory.average_loss)), (FAST, _ENGINE)),
    "sum_vs_mean": ((LESSON, _LESSON), (FAST, (*_ENGINE, training._mean_of))),
    "divergence": (("Code: the theory", (theory.step_factors, theory.critical_lrs, theory._critical)),),
    "stability": (
        (LESSON, (lesson.final_weights, *_LESSON)),
        (
            FAST,
            (
                stability.stability_map,
                stability._map_kernel,
                stability.momentum_map,
                stability._momentum_kernel,
                stability._sums,
                stability._run,
            ),
        ),
    ),
}


def _script_links(script: str) -> str:
    """A download link and a copy button for `script` (ASCII, so atob gives it back as written)."""
    encoded = base64.b64encode(script.encode("ascii")).decode("ascii")
    return (
        f"{download_link(script, FILENAME, 'text/x-python')} &nbsp; "
        f'<button class="scanlab-copy" onclick="navigator.clipboard.writeText(atob(\'{encoded}\'))'
        f".then(() => {{ this.textContent = 'Copied'; }})\">Copy to clipboard</button>"
    )


def _page_url(environ) -> str:
    """The address of the page this kernel serves, "" outside Voila.

    Host, port, path and query come from the request details Voila hands the kernel (SERVER_NAME,
    SERVER_PORT, SCRIPT_NAME, QUERY_STRING). Not VOILA_REQUEST_URL: Voila gives each new request's URL
    to the kernel that refills the pool, so a preheated kernel holds the previous visitor's address
    (none at all for the first visitor after a start). Only its scheme is used, since it is the same
    server's; http when there is none.
    """
    host = environ.get("SERVER_NAME", "")
    if not host:
        return environ.get("VOILA_REQUEST_URL", "")
    scheme = urlsplit(environ.get("VOILA_REQUEST_URL", "")).scheme
    port = environ.get("SERVER_PORT", "")
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    path = environ.get("SCRIPT_NAME", "") or "/"
    return urlunsplit(
        (scheme if scheme in ("http", "https") else "http", netloc, path, environ.get("QUERY_STRING", ""), "")
    )


class Explorer:
    """The explorer's state and widgets: `controls` is the sticky control panel, `figures` the
    charts (widgets.surface.Surface) by name, `stability` the stability map panel, and `show(...)`
    lays charts side by side ("stability" names the map). `hood` is the "under the hood" section,
    whose panels are built when first opened.

    `model` shares a warmed-up `Model`; `plotly_js` is where the page serves Plotly.js
    (`widgets.surface.plotly_url`; None: each chart brings it); `background=False` computes the
    map in the callback itself."""

    def __init__(
        self,
        settings: Settings = DEFAULTS,
        *,
        notices=(),
        base_url: str = "",
        model: Model | None = None,
        plotly_js: str | None = None,
        background: bool = True,
        presentation: Presentation = DEFAULT_PRESENTATION,
    ):
        settings, problems = sanitize(settings._asdict())
        self.presentation = presentation
        # How narrow a chart may be drawn beside another (side_by_side): the projector's need more.
        self.beside = BESIDE_PROJECTOR if self._on_projector else BESIDE
        make_figure = surface_maker(
            plotly_js,
            prepare=enlarge if self._on_projector else None,
            config={"toImageButtonOptions": {"filename": "scanlab"}},
        )
        self.model = model if model is not None else Model()
        self.batch = Batch()  # each callback's widget changes go to the page as one message
        self.access = Access()  # names and keyboard access ipywidgets' views lack (widgets/access.js)
        self.result: Result = self.model.compute(settings)
        self.base_url = base_url
        self.step = settings.N  # playback position: the weight after this many steps

        self.inputs = _controls()
        for name, widget in self.inputs.items():
            widget.value = getattr(settings, name)
        self.presets = {
            key: ipw.Button(description=label, tooltip=f"preset: {label}", layout={"width": "auto"})
            for key, (label, _) in PRESETS.items()
        }
        self.play = ipw.Play(
            value=self.step, min=0, max=settings.N, interval=400, description="play", tooltip="play the scan"
        )
        self.step_slider = ipw.IntSlider(value=self.step, min=0, max=settings.N, description="step")
        ipw.jslink((self.play, "value"), (self.step_slider, "value"))
        self.step_button = ipw.Button(description="Step", tooltip="one step of the scan", icon="step-forward")
        self.reset_button = ipw.Button(description="Reset", tooltip="back to step 0", icon="undo")
        self.step_info = ipw.HTML()
        self.status = ipw.HTML()
        self.notice = ipw.HTML()
        self.share = ipw.Text(description="share link", disabled=False, layout={"width": "100%"})
        self.share.tooltip = "the URL that reproduces this state"
        self.share.style = {"description_width": "5.5em"}
        self.script_button = ipw.ToggleButton(
            value=False, description="Copy as script", icon="code", tooltip="this run as a Python script"
        )
        self.script_text = ipw.Textarea(layout={"width": "100%", "height": "24em"})
        self.script_links = ipw.HTML()
        self.script_box = ipw.VBox([self.script_links, self.script_text], layout={"display": "none"})
        self.csv_button = ipw.Button(description="Export CSV", icon="table", tooltip=CSV_HEADER)
        self.html_button = ipw.Button(
            description="Export charts", icon="download", tooltip="every chart in one standalone HTML file"
        )
        self.export_links = ipw.HTML()

        self._make_figure = make_figure
        self.figures = {name: self._chart(name) for name in CHARTS}
        self.captions = {}  # the numbers of a chart that change with a slider, above it
        for name, chart in CHARTS.items():
            if text := chart.caption(self.result, settings.loss):
                self.captions[name] = ipw.HTML(html.escape(text))  # wrapped within its chart's width
                self.captions[name].add_class("scanlab-caption")
        self.status.value = status = self._status_text()
        for name in CHARTS:
            self._describe(name, settings.loss, plain_text(status))
        self.stability = StabilityPanel(
            self.model,
            settings,
            self._pick,
            make_figure,
            background=background,
            batch=self.batch,
            control=self.inputs["map"],
        )
        self.hood = UnderTheHood(make_figure, self.beside, batch=self.batch)
        self._show_texts(list(notices) + problems)
        self.controls = self._control_panel()

        for widget in self.inputs.values():
            pin(widget)
        self._step_range = {"min": 0, "max": settings.N}
        pin(self.play, self._step_range)
        pin(self.step_slider, self._step_range)

        self._busy = False
        for name, widget in self.inputs.items():
            widget.observe(self._on_view if name == "loss" else self._on_input, names="value")
        for key, button in self.presets.items():
            button.on_click(lambda _, key=key: self.apply(PRESETS[key][1]))
        self.play.observe(self._on_step, names="value")
        self.step_button.on_click(lambda _: self._move_step(self.step + 1))
        self.reset_button.on_click(lambda _: self._move_step(0))
        self.script_button.observe(self._on_script, names="value")
        self.csv_button.on_click(lambda _: self._export("csv"))
        self.html_button.on_click(lambda _: self._export("html"))

    @classmethod
    def from_environment(cls) -> Explorer:
        """An explorer in the state the page's URL asks for (Voila passes it as QUERY_STRING).

        The slow part, compiling the engine and both maps and drawing the default data, comes
        first. Under Voila's preheated kernels (voila.json) the notebook runs that far before any
        visitor arrives, builds the default view, then waits here for the request that brings the
        query string, whose settings the view takes (`arrive`): the widgets' messages and the
        figures' validation are out of the request's way (the page's HTML ends about 0.2 s sooner). A
        link to another presentation (`?view=projector`, `?hide=`) gets a view built anew.
        """
        model = Model()
        model.compute(DEFAULTS)
        model.stability(DEFAULTS)  # compiles the map
        model.stability(DEFAULTS._replace(map="momentum"))  # and the lr x momentum map
        base_url = os.environ.get("VOILA_BASE_URL", "/")
        preheated = os.environ.get("VOILA_PREHEAT", "False") != "False"
        early = cls(DEFAULTS, model=model, plotly_js=plotly_url(base_url)) if preheated else None
        return_freed_memory()
        wait_for_request()
        query = os.environ.get("QUERY_STRING", "")
        settings, notices = from_query(query)
        presentation, more = presentation_from_query(query)
        url = _page_url(os.environ)
        base = urlunsplit(urlsplit(url)._replace(query="", fragment="")) if url else ""
        if early is not None and presentation == DEFAULT_PRESENTATION:
            early.arrive(settings, notices + more, base)
            return early
        if early is not None:
            ipw.Widget.close_all()  # the default view's, the kernel's only widgets: none reach the page
        served = preheated or urlsplit(url).scheme in ("http", "https")  # else JupyterLab
        explorer = cls(
            settings,
            notices=notices + more,
            base_url=base,
            model=model,
            plotly_js=plotly_url(base_url) if served else None,
            presentation=presentation,
        )
        return_freed_memory()
        return explorer

    def arrive(self, settings: Settings, notices=(), base_url: str = "") -> None:
        """Make an explorer built at DEFAULTS, before its visitor came, the one that
        `Explorer(settings, notices=notices, base_url=base_url)` builds for them (of the same
        presentation), before the page connects: the page's first state is then theirs."""
        self.base_url = base_url
        if settings != self.settings:
            self.model.stability(settings)  # kept, so the map is drawn with the rest, not on the worker
            for figure in self.figures.values():  # axes fitted to the visitor's run, not kept from ours
                send(figure, [], [], dict.fromkeys(f"{axis}.range" for axis in RANGE_PAD))
            self.apply(settings)
        self._show_texts(list(notices))
        return_freed_memory()

    # Layout -----------------------------------------------------------------------------------

    def _control_panel(self) -> ipw.VBox:
        i = self.inputs
        column = {"width": "33%", "min_width": "300px"}
        rows = {
            "presets": ipw.HBox(
                [ipw.Label("Presets:"), *self.presets.values()], layout={"flex_flow": "row wrap"}
            ),
            "playback": ipw.HBox(
                [self.play, self.step_button, self.reset_button, self.step_slider],
                layout={"flex_flow": "row wrap", "align_items": "center"},
            ),
            "share": ipw.HBox(
                [self.share, self.script_button, self.csv_button, self.html_button],
                layout={"align_items": "center", "flex_flow": "row wrap"},
            ),
        }
        # The class names are the dashboard's layout (serving's page template): there the panel is a
        # column beside the charts, and on a phone a sheet that shows the "scanlab-primary" controls
        # until it is opened.
        primary = ipw.VBox([i["lr"], i["N"], i["B"]], layout=column)
        primary.add_class("scanlab-primary")
        columns = ipw.HBox(
            [
                primary,
                ipw.VBox([i["w0"], i["true_w"], i["noise"]], layout=column),
                ipw.VBox([i["loss"], i["kind"], i["seed"]], layout=column),
                ipw.VBox([i["optimizer"], i["momentum"], i["schedule"]], layout=column),
            ],
            layout={"flex_flow": "row wrap"},
        )
        columns.add_class("scanlab-columns")
        panel = ipw.VBox(
            [
                ipw.HTML(f"<style>{_STYLE}{_PROJECTOR_TEXT if self._on_projector else ''}</style>"),
                rows["presets"],
                columns,
                rows["playback"],
                self.step_info,
                self.status,
                self.notice,
                rows["share"],
                self.export_links,
                self.script_box,
            ]
        )
        for name in self.presentation.hide:  # a teacher's focused link
            (rows.get(name) or i[name]).layout.display = "none"
        panel.add_class("scanlab-controls")
        self._projector(panel)
        self.status.add_class("scanlab-status")
        self.notice.add_class("scanlab-notice")
        return panel

    @property
    def _on_projector(self) -> bool:
        return self.presentation.view == "projector"

    def _projector(self, box):
        """`box`, marked for the projector's larger text when the page is in that view."""
        if self._on_projector:
            box.add_class("scanlab-projector")
        return box

    def _view(self, name: str) -> ipw.Box:
        """A box holding the named chart, under its caption if it has one."""
        if name == "stability":
            return self.stability.widget
        caption = [self.captions[name]] if name in self.captions else []
        return ipw.VBox([*caption, self.figures[name]])

    def _chart(self, name: str):
        """The named chart as the current result, view and step draw it."""
        return CHARTS[name].build(self.result, self.settings.loss, self.step, self._make_figure)

    def show(self, *names: str) -> ipw.VBox:
        """The named charts side by side, wrapping on narrow screens, with the source of the core
        functions that produced them underneath (`CODE`: the lesson's loop, then the engine's; each
        closed until opened)."""
        views = [self._view(name) for name in names]
        wide = [views[i] for i, name in enumerate(names) if name in WIDE]
        charts = side_by_side(views, wide=wide, beside=self.beside)
        parts = {}
        for name in names:
            for title, functions in CODE[name]:
                parts.setdefault(title, []).extend(functions)
        codes = []
        for title, functions in parts.items():
            functions = list(dict.fromkeys(functions))
            shown = ", ".join(inspect.unwrap(f).__name__ for f in functions)
            codes.append(code_view(functions, f"{title} ({shown})"))
        return self._projector(ipw.VBox([charts, *codes]))

    @property
    def script(self) -> str:
        """The current run as a standalone script ("Copy as script")."""
        return training_script(self.settings, self.share.value)

    # State ------------------------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self.result.settings

    @contextlib.contextmanager
    def _quietly(self):
        """Set widgets without their callbacks reacting to each change."""
        self._busy = True
        try:
            yield
        finally:
            self._busy = False

    @batched
    def apply(self, settings: Settings) -> None:
        """Set every control at once (a preset, a test) and recompute once."""
        with self._quietly():
            for name, widget in self.inputs.items():
                widget.value = getattr(settings, name)
        self._on_input()

    def _read(self) -> tuple[Settings, list[str]]:
        """The controls' values, validated: a visitor can send any value over the widget protocol.

        Values that needed fixing are written back with a notice. Floats rounded to 6 significant
        digits are not: the browser would echo 10**log10(v) again, and the two would ping-pong.
        """
        settings, notices = sanitize({name: widget.value for name, widget in self.inputs.items()})
        if notices:
            with self._quietly():
                for name, widget in self.inputs.items():
                    if widget.value != getattr(settings, name):
                        widget.value = getattr(settings, name)
        return settings, notices

    # Callbacks --------------------------------------------------------------------------------

    @batched
    def _on_input(self, change=None) -> None:
        if self._busy:
            return
        settings, notices = self._read()
        previous = self.result.settings
        if settings == previous and not notices:
            return  # e.g. the browser echoing a value it rounded
        self.result = self.model.compute(settings)
        if settings.N != previous.N:
            self._set_step_range(settings.N)
        self._render(settings.loss)
        # The words before the map: its "Computing…" flushes the batch, and the status sentence
        # must reach the page in the same message as the charts it describes.
        self._show_texts(notices)
        self.stability.follow(settings)

    @batched
    def _on_view(self, change=None) -> None:
        if self._busy:
            return
        settings, notices = self._read()
        if settings._replace(loss=self.settings.loss) != self.settings:
            return self._on_input()  # more than the view changed
        self.result = self.result._replace(settings=settings)
        self._render(settings.loss)
        self._show_texts(notices)

    @batched
    def _on_step(self, change) -> None:
        if self._busy:
            return  # a new result is being drawn, marker included
        self.step = min(max(int(change["new"]), 0), self.settings.N)
        for name, chart in CHARTS.items():
            chart.update_marker(self.figures[name], self.result, self.settings.loss, self.step)
        self.step_info.value = self._step_text()

    def _pick(self, **fields) -> None:
        """A click on the stability map: go to that cell's lr and B, or lr and momentum (with the
        momentum optimizer, whose runs the lr x momentum map shows)."""
        if "momentum" in fields:
            fields["optimizer"] = "momentum"
        self.apply(self.settings._replace(**fields))

    @batched
    def _on_script(self, change=None) -> None:
        shown = self.script_button.value
        self.script_box.layout.display = "flex" if shown else "none"
        if shown:
            script = self.script
            self.script_text.value = script
            self.script_links.value = _script_links(script)

    @batched
    def _export(self, kind: str) -> None:
        """A download link for the current run: its numbers (CSV) or every chart (HTML)."""
        stem = file_stem(self.settings)
        if kind == "csv":
            link = download_link(run_csv(self.result), f"{stem}.csv", "text/csv")
        else:
            figures = [*self.figures.values(), self.stability.figure]
            captions = [CHARTS[name].caption(self.result, self.settings.loss) for name in self.figures]
            wide = [i for i, name in enumerate([*self.figures, "stability"]) if name in WIDE]
            page = charts_html(figures, self.settings, self.share.value, captions, wide)
            link = download_link(page, f"{stem}.html", "text/html")
        self.export_links.value = link

    def _move_step(self, step: int) -> None:
        self.play.playing = False
        self.play.value = min(max(step, 0), self.settings.N)

    def _set_step_range(self, n: int) -> None:
        self.step = n
        with self._quietly():
            self.play.playing = False
            self._step_range["max"] = n
            self.play.max = self.step_slider.max = n
            # Both: the page's link between them moves the slider, but a page that connects later
            # (an explorer built ahead of its visitor) gets the slider's value from here.
            self.play.value = self.step_slider.value = n

    def _render(self, view: str) -> None:
        """The current result on every chart, its caption and the status line; each chart's new
        points and its words (`_describe`) go in one message."""
        self.status.value = status = self._status_text()
        words = plain_text(status)
        for name, chart in CHARTS.items():
            figure = self.figures[name]
            with figure.hold_sync():
                chart.update(figure, self.result, view, self.step)
                self._describe(name, view, words)
        for name, caption in self.captions.items():
            caption.value = html.escape(CHARTS[name].caption(self.result, view))

    def _describe(self, name: str, view: str, words: str) -> None:
        """A chart's text alternative: its title, its caption's numbers, and the run in `words`."""
        figure = self.figures[name]
        title = plain_text(figure.get("title.text") or "")
        caption = CHARTS[name].caption(self.result, view)
        figure.alt = " ".join(part for part in (f"{title}.", caption and f"{caption}.", words) if part)

    # Words ------------------------------------------------------------------------------------

    def _show_texts(self, notices) -> None:
        self.step_info.value = self._step_text()
        self.share.value = self.base_url + "?" + to_query(self.settings, self.presentation)
        self.notice.value = "<br>".join(f"&#9888; {html.escape(n)}" for n in notices) if notices else ""
        if self.script_button.value:
            self._on_script()
        self.export_links.value = ""  # an export is of the run it was made from

    def _status_text(self) -> str:
        r, s = self.result, self.settings
        lines = []
        for loss in LOSSES:
            if not shown(s.loss, loss):
                continue
            h = r.histories[loss]
            if h.diverged_at is not None:
                past, final = float(h.weights[h.diverged_at + 1]), float(h.weights[-1])
                words = (
                    f"diverged at step {h.diverged_at}: w = {past:.4g}, |w − w*| = {abs(past - r.w_star):.3g}"
                    f" (final w = {final:.4g})"
                )
            else:
                final = float(h.weights[-1])
                error = abs(final - r.w_star)
                words = f"{REGIME_WORDS[r.regimes[loss]]}: final w = {final:.6g}, |w − w*| = {error:.3g}"
            lines.append(
                f"<b>{loss} loss</b>: {html.escape(words)} "
                f"(lr = {s.lr:.4g}, critical lr = {r.critical_lr[loss]:.4g}, w* = {r.w_star:.6g})"
            )
        if overlaid(s):
            loss = first_shown(s.loss)
            h = r.optimized[loss]
            if h.diverged_at is not None:
                words = f"diverged at step {h.diverged_at}"
            else:
                final = float(h.weights[-1])
                words = f"final w = {final:.6g}, |w − w*| = {abs(final - r.w_star):.3g}"
            lines.append(f"<b>{html.escape(run_name(s))}</b> ({loss} loss, dotted): {html.escape(words)}")
        return "<br>".join(lines)

    def _step_text(self) -> str:
        r, s, k = self.result, self.settings, self.step
        lines = []
        for loss in LOSSES:
            if not shown(s.loss, loss):
                continue
            h = r.histories[loss]
            if k >= s.N:
                lines.append(
                    f"<b>{loss}</b>: after {'its one step' if s.N == 1 else f'all {s.N} steps'} the carry is "
                    f"w = {float(h.weights[-1]):.6g}."
                )
                continue
            w, g, new = float(h.weights[k]), float(h.grads[k]), float(h.weights[k + 1])
            lines.append(
                f"<b>{loss}</b>, step {k} of {s.N}: carry in w<sub>{k}</sub> = {w:.6g}; batch {k}'s gradient "
                f"at it g = {g:.6g}; carry out w<sub>{k + 1}</sub> = w<sub>{k}</sub> − lr·g = {w:.6g} − "
                f"{s.lr:.4g}·({g:.6g}) = {new:.6g}"
            )
        if overlaid(s):
            lines.append(self._carry_text())
        return "<br>".join(lines)

    def _carry_text(self) -> str:
        """The overlaid run's carry after the current step: (w, the optimizer's state)."""
        r, s, k = self.result, self.settings, self.step
        loss = first_shown(s.loss)
        h = r.optimized[loss]
        # The state's leaves by their names in Optax's NamedTuples (trace; count, mu, nu).
        leaves = jax.tree_util.tree_flatten_with_path(h.states)[0]
        state = ", ".join(
            f"{jax.tree_util.keystr(path[-1:], simple=True)} = {float(np.asarray(leaf)[k - 1]):.6g}"
            for path, leaf in leaves
        )
        state = "state as Optax's init makes it" if k == 0 else state or "a state of no arrays (sgd's)"
        if r.schedule is not None and k < s.N:  # scanned with the batches, not in the carry
            state += f"; step {k}'s lr from the schedule: {float(r.schedule[k]):.4g}"
        return (
            f"<b>{html.escape(run_name(s))}</b>, after {k} steps: carry (w, state) = "
            f"(w = {float(h.weights[k]):.6g}; {html.escape(state)})"
        )
