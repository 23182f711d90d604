"""The explorer: the `Explorer`, which wires the controls to the five charts, the stability map,
playback, the share link and the exports.

Callbacks do no maths: they read the controls through `sanitize`, ask `Model` (which asks `core`)
for a result, and write it into the charts (`widgets.surface.send`) and the words
(`widgets.words`), one message for them all (`widgets.batch`).
A view change (which loss is shown) or a playback step reuses the last result. The widgets come
from widgets.controls, widgets.playback and widgets.export, the panel's layout and CSS from
widgets.layout.
"""

from __future__ import annotations

import contextlib
import html
import os

import ipywidgets as ipw
from IPython.display import HTML

from widgets.access import Access
from widgets.axes import RANGE_PAD
from widgets.batch import Batch, batched
from widgets.code import CODE, FAST, LESSON, chart_code
from widgets.controls import (
    controls,
    defaults_button,
    momentum_note,
    pin,
    preset_buttons,
    show_used,
    standardize_button,
)
from widgets.export import ExportBar
from widgets.figures import CHARTS
from widgets.heap import return_freed_memory
from widgets.hood import UnderTheHood
from widgets.layout import BESIDE, BESIDE_PROJECTOR, control_panel, for_view, page_css, side_by_side, words
from widgets.model import Model, Result
from widgets.own_data import REPLACE_WHY, STANDARDIZE_WHY, OwnData
from widgets.playback import Playback
from widgets.preheat import wait_for_request
from widgets.projector import enlarge
from widgets.script import training_script
from widgets.settings import (
    DEFAULT_PRESENTATION,
    DEFAULTS,
    PRESETS,
    Presentation,
    Settings,
    of_rows,
    page_request,
    sanitize,
    to_query,
)
from widgets.stability import StabilityPanel
from widgets.still import Stilled, controls_still, page_still
from widgets.surface import plain_text, plotly_url, send, surface_maker
from widgets.words import CAPTIONS, REGIME_WORDS, alt_text, caption, notices_html, status_html, step_html
from widgets.your_loop import DEFAULT_TIMEOUT, SERVED_NOTE, YourLoop


def _note(text: str) -> ipw.HTML:
    """A line of small print under a control."""
    note = ipw.HTML(html.escape(text), layout={"display": "none"})
    note.add_class("scanlab-note")
    return note


# The charts that take a row of the page to themselves (widgets.figures.side_by_side), the map included.
WIDE = frozenset({"stability", *(name for name, chart in CHARTS.items() if chart.wide)})


class Explorer:
    """The explorer's state and widgets: `controls` is the sticky control panel, `figures` the
    charts (widgets.surface.Surface) by name, `stability` the stability map panel, and `show(...)`
    lays charts side by side ("stability" names the map), the trajectory under `words` (the
    notices and the status sentence). `hood` is the "under the hood" section,
    whose panels are built when first opened. `inputs` are the controls by Settings field,
    `playback` and `exports` the playback and export bar (widgets.playback, widgets.export), whose
    widgets are here under their own names too (`play`, `share`, ...).

    `model` shares a warmed-up `Model`; `plotly_js` is where the page serves Plotly.js
    (`widgets.surface.plotly_url`; None: each chart brings it); `background=False` computes the
    map in the callback itself; a learner's function `step` is drawn as `draw_step` draws it."""

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
        step=None,
    ):
        self.model = model if model is not None else Model()
        self.yours: YourLoop | None = None  # a learner's function over the lesson's loop (`draw_step`)
        # The N and B the visitor chose, which data of rows may lower (`_checked`).
        self.chosen = (settings.N, settings.B)
        settings, problems = self._checked(settings._asdict())
        self.presentation = presentation
        # How narrow a chart may be drawn beside another (side_by_side): the projector's need more.
        self.beside = BESIDE_PROJECTOR if self._on_projector else BESIDE
        make_figure = surface_maker(
            plotly_js,
            prepare=enlarge if self._on_projector else None,
            config={"toImageButtonOptions": {"filename": "scanlab"}},
        )
        self.batch = Batch()  # each callback's widget changes go to the page as one message
        self.access = Access(self.batch)  # labels the page; hidden in each output (widgets/access.py)
        self.result: Result = self._compute(settings)
        self.base_url = base_url
        self.step = settings.N  # playback position: the weight after this many steps

        self.inputs = controls()
        for name, widget in self.inputs.items():
            widget.value = getattr(settings, name)
        self.presets = preset_buttons()
        self.defaults_button = defaults_button()
        self.momentum_note = momentum_note()  # why momentum is disabled, while it is
        # Data of rows: the visitor's own CSV file, and why each of the two flags matters.
        self.own_data = OwnData(self.model.rows, self._on_own_data)
        self.flag_notes = {"standardize": _note(STANDARDIZE_WHY), "replace": _note(REPLACE_WHY)}
        self.playback = Playback(settings.N, batch=self.batch)
        self.play, self.step_slider = self.playback.play, self.playback.slider
        self.step_button, self.reset_button = self.playback.step_button, self.playback.reset_button
        self.step_info = ipw.HTML()
        self.status = ipw.HTML()
        self.notice = ipw.HTML()
        self.standardize_button = standardize_button()
        self.words = words(self.notice, self.status, self.standardize_button, self._on_projector)
        # A control's notice again under the controls, where the value was typed: the words above
        # the trajectory may be scrolled far out of view by then. A link's notices are the words'.
        self.control_notice = ipw.HTML(layout={"display": "none"})
        self.control_notice.add_class("scanlab-notice")
        self.control_notice.add_class("scanlab-control-notice")
        # The export bar's widgets by the names the explorer has always had.
        self.exports = bar = ExportBar(view=presentation != DEFAULT_PRESENTATION)
        self.share, self.script_button = bar.share, bar.script_button
        self.csv_button, self.html_button = bar.csv_button, bar.html_button
        self.script_text, self.script_links = bar.script_text, bar.script_links
        self.script_box, self.export_links = bar.script_box, bar.links

        self._make_figure = make_figure
        self.figures = {name: self._chart(name) for name in CHARTS}
        self._parts = {}  # chart name -> the box of it and its caption, once shown
        self._model_drawn = settings.model  # the model whose charts were drawn last
        self.captions = {}  # the numbers of a chart that change with a slider, beside it
        for name in CHARTS:
            if name in CAPTIONS:
                text = caption(name, self.result, settings.loss)
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
        code = "code" not in presentation.hide  # ?hide=code: no "Code:" part anywhere (the exercise)
        self.hood = UnderTheHood(make_figure, self.beside, batch=self.batch, code=code, access=self.access)
        self._show_texts(list(notices) + problems)
        self.controls = self.access.hidden_in(self._control_panel())
        # A served page shows stills of its first screen before the live widgets (widgets.still);
        # a notebook in JupyterLab shows the widgets alone.
        self.stills = plotly_js is not None
        self._still_styled = False  # whether a still has brought the page its styles
        if self.stills:
            self.controls.still = self._styled_once(controls_still)

        for widget in self.inputs.values():
            pin(widget)

        self._busy = False
        for name, widget in self.inputs.items():
            widget.observe(self._on_view if name == "loss" else self._on_input, names="value")
        for key, button in self.presets.items():
            button.on_click(lambda _, key=key: self.apply(PRESETS[key][1]))
        self.defaults_button.on_click(lambda _: self.restore_defaults())
        self.standardize_button.on_click(self._standardize)
        self.play.observe(self._on_step, names="value")
        self.step_button.on_click(lambda _: self._move_step(self.step + 1))
        self.reset_button.on_click(lambda _: self._move_step(0))
        self.script_button.observe(self._on_script, names="value")
        self.exports.with_view.observe(self._on_with_view, names="value")
        self.csv_button.on_click(lambda _: self._export("csv"))
        self.html_button.on_click(lambda _: self._export("html"))
        if step is not None:
            self.draw_step(step)

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
        # Not the w, b model's: its run held 37 MB more in every waiting kernel, and its first use
        # loads it from JAX's compilation cache (`make run` keeps one) in about 0.3 s.
        base_url = os.environ.get("VOILA_BASE_URL", "/")
        preheated = os.environ.get("VOILA_PREHEAT", "False") != "False"
        early = cls(DEFAULTS, model=model, plotly_js=plotly_url(base_url)) if preheated else None
        return_freed_memory()
        wait_for_request()
        request = page_request(os.environ)
        if early is not None and request.presentation == DEFAULT_PRESENTATION:
            early.arrive(request.settings, request.notices, request.base_url)
            return early
        if early is not None:
            ipw.Widget.close_all()  # the default view's, the kernel's only widgets: none reach the page
        explorer = cls(
            request.settings,
            notices=request.notices,
            base_url=request.base_url,
            model=model,
            plotly_js=plotly_url(base_url) if preheated or request.served else None,
            presentation=request.presentation,
        )
        return_freed_memory()
        return explorer

    def arrive(self, settings: Settings, notices=(), base_url: str = "") -> None:
        """Make an explorer built at DEFAULTS, before its visitor came, the one that
        `Explorer(settings, notices=notices, base_url=base_url)` builds for them (of the same
        presentation), before the page connects: the page's first state is then theirs."""
        self.base_url = base_url
        self.chosen = (settings.N, settings.B)
        settings, more = self.model.rows.fit(settings)
        notices = [*notices, *more]
        if settings != self.settings:
            self.model.stability(settings)  # kept, so the map is drawn with the rest, not on the worker
            for figure in self.figures.values():  # axes fitted to the visitor's run, not kept from ours
                send(figure, [], [], dict.fromkeys(f"{axis}.range" for axis in RANGE_PAD))
            self.apply(settings)
        self._show_texts(list(notices))
        return_freed_memory()

    # Layout -----------------------------------------------------------------------------------

    def _control_panel(self) -> ipw.VBox:
        return control_panel(
            self.inputs,
            presets=[*self.presets.values(), self.defaults_button],
            playback=self.playback.widgets,
            texts=[self.step_info, self.control_notice],
            share=self.exports.row,
            below=self.exports.below,
            notes={"momentum": self.momentum_note, "kind": self.own_data.widget, **self.flag_notes},
            hide=self.presentation.hide,
            projector=self._on_projector,
        )

    @property
    def _on_projector(self) -> bool:
        return self.presentation.view == "projector"

    def _view(self, name: str) -> ipw.Box:
        """A box holding the named chart and its caption if it has one (`_part`). The landscape's
        box holds the w, b model's contour chart ("plane") too, shown in its place under that
        model, unless the plane was given a place of its own (`show`)."""
        if name == "stability":
            return self.stability.widget
        if name == "plane":
            return self._part("plane")  # shown or hidden with the model, its flex box included
        names = [name, "plane"] if name == "landscape" and "plane" not in self._parts else [name]
        return ipw.VBox([self._part(part) for part in names])

    def _part(self, name: str) -> ipw.Box:
        """The named chart with its caption (above it, under the plane), shown while the model is
        one of the chart's."""
        words = [self.captions[name]] if name in self.captions else []
        # The plane's caption is a paragraph (the valley's numbers and both paths'): under the
        # chart, which then starts its place (on the projector's first screen, `show`).
        part = ipw.VBox([self.figures[name], *words] if name == "plane" else [*words, self.figures[name]])
        self._parts[name] = part
        self._show_model_charts()
        return part

    @property
    def drawn(self) -> list[str]:
        """The charts the current model draws (`Chart.models`): the landscape or the plane."""
        return [name for name, chart in CHARTS.items() if self.settings.model in chart.models]

    def _show_model_charts(self) -> None:
        drawn = self.drawn
        for name, part in self._parts.items():
            part.layout.display = None if name in drawn else "none"

    def _chart(self, name: str):
        """The named chart as the current result, view and step draw it."""
        return CHARTS[name].build(self.result, self.settings.loss, self.step, self._make_figure)

    def show(self, *names: str, code: bool = True) -> ipw.VBox:
        """The named charts side by side, wrapping on narrow screens, with the source of the core
        functions that produced them underneath (`code`; False leaves it to a `code()` of its
        own). Above a row holding the trajectory, the `words`: what happened to the run is read
        where the run is drawn, on every screen. In the projector view the w, b model's contour
        chart comes first there, on the room's first screen: its place is the trajectory's row
        when that row is shown before the landscape (the lesson's order)."""
        if self._on_projector and "trajectory" in names and "plane" not in self._parts:
            names = ("plane", *names)
        views = [self._view(name) for name in names]
        wide = [views[i] for i, name in enumerate(names) if name in WIDE]
        charts = side_by_side(views, wide=wide, beside=self.beside)
        above = [self.words] if "trajectory" in names else []
        box = Stilled([*above, charts, *(self._code_views(names) if code else ())])
        if self.stills and "stability" not in names:  # the map is below the first screen
            box.still = self._styled_once(lambda css: page_still(box, css))
        return for_view(self.access.hidden_in(box), self._on_projector)

    def code(self, *names: str) -> Stilled:
        """The source of the core functions behind the named charts, one closed "Code:" part per
        kind (`widgets.code.chart_code`: the lesson's loop, then the engine's); none under
        `?hide=code`. The lesson puts its first screen's code below both of its rows of charts,
        where it splits no charts of that screen."""
        box = Stilled(self._code_views(names))
        if self.stills:  # its bars hold their place while the live page comes (widgets.still)
            box.still = self._styled_once(lambda css: page_still(box, css))
        return for_view(self.access.hidden_in(box), self._on_projector)

    def _code_views(self, names) -> list:
        # The plane's code comes with the landscape's (widgets.code.chart_code).
        return [] if "code" in self.presentation.hide else chart_code([n for n in names if n != "plane"])

    def _styled_once(self, make):
        """A still callable from `make(css)`: the first still the page shows that is made brings
        the styles the stills need before the control panel's widget does (widgets.layout.page_css),
        the others None. The cells' outputs come in order, and each copy was 6.5 KB more of the page
        to parse; a still that fails to be made leaves them to the next."""

        def made() -> str:
            markup = make(None if self._still_styled else page_css(self._on_projector))
            self._still_styled = True
            return markup

        return made

    @property
    def script(self) -> str:
        """The current run as a standalone script ("Copy as script")."""
        return training_script(self.settings, self.share.value, table=self._table)

    # State ------------------------------------------------------------------------------------

    @property
    def _table(self):
        """The table the data's rows come from (a `core.Table`), None for generated data: the
        script embeds it and Export CSV offers it as a file."""
        return self.model.rows.table(self.settings.kind) if of_rows(self.settings) else None

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
        self.chosen = (settings.N, settings.B)
        with self._quietly():
            for name, widget in self.inputs.items():
                widget.value = getattr(settings, name)
        self._on_input()

    def _standardize(self, _button) -> None:
        """The status's offer: tick "standardize" (its callback runs)."""
        self.inputs["standardize"].value = True

    @batched
    def restore_defaults(self) -> None:
        """Every control back to DEFAULTS and playback at the run's end: the page as it opened
        without a link ("Reset" rewinds the steps only)."""
        self.apply(DEFAULTS)
        self._move_step(DEFAULTS.N)

    def _read(self) -> tuple[Settings, list[str]]:
        """The controls' values, validated: a visitor can send any value over the widget protocol.

        Values that needed fixing are written back with a notice. Floats rounded to 6 significant
        digits are not: the browser would echo 10**log10(v) again, and the two would ping-pong.
        """
        values = {name: widget.value for name, widget in self.inputs.items()}
        settings, notices = self._checked(values, self.settings)
        if notices:
            with self._quietly():
                for name, widget in self.inputs.items():
                    if widget.value != getattr(settings, name):
                        widget.value = getattr(settings, name)
        return settings, notices

    def _checked(self, values: dict, previous: Settings = DEFAULTS) -> tuple[Settings, list[str]]:
        """`sanitize`d settings that the data can give (`Rows.fit`: data of rows may lower N), and
        a notice per value changed. An N or B that the data lowered comes back, with a notice,
        once other data allow the visitor's choice again (`chosen`, which moving N or B sets)."""
        settings, notices = sanitize(values)
        moved = (settings.N, settings.B) != (previous.N, previous.B)
        other_data = (settings.kind, settings.replace) != (previous.kind, previous.replace)
        restoring = not moved and other_data and self.chosen != (settings.N, settings.B)
        if moved:
            self.chosen = (settings.N, settings.B)
        elif restoring:
            settings = settings._replace(N=self.chosen[0], B=self.chosen[1])
        settings, more = self.model.rows.fit(settings, previous)
        if restoring and (settings.N, settings.B) == self.chosen and not more:
            notices.append(
                f"N × B back to {settings.N} × {settings.B}, as you chose them: the data allow it again."
            )
        return settings, notices + more

    # Callbacks --------------------------------------------------------------------------------

    @batched
    def _on_input(self, change=None, notices=(), new_data=False) -> None:
        """The controls read and run; `notices` are said with the run's, and `new_data` (another
        file of the visitor's) runs even when no control changed."""
        if self._busy:
            return
        settings, more = self._read()
        notices = [*notices, *more]
        previous = self.result.settings
        if settings == previous and not notices and not new_data:
            return  # e.g. the browser echoing a value it rounded
        self.result = self._compute(settings)
        if settings.N != previous.N:
            self._set_step_range(settings.N)
        self._render(settings.loss)
        # The words before the map: its "Computing…" flushes the batch, and the status sentence
        # must reach the page in the same message as the charts it describes.
        self._show_texts(notices, from_controls=True)
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
        self._show_texts(notices, from_controls=True)

    @batched
    def _on_step(self, change) -> None:
        if self._busy:
            return  # a new result is being drawn, marker included
        self.step = self.playback.clamp(change["new"])
        self.playback.show(self.step)
        for name in self.drawn:
            CHARTS[name].update_marker(self.figures[name], self.result, self.settings.loss, self.step)
        self.step_info.value = step_html(self.result, self.step)

    @batched
    def _on_own_data(self, notices: list, new: bool) -> None:
        """A visitor's file read (`new`: run on it, as kind "own") or refused (`notices` say why)."""
        if not new:
            # A refused file changes nothing: the run stays, and so do its notices (an N the data
            # lowered), the refusal said beside them.
            return self._show_texts([*self._said, *notices], from_controls=True, kept=len(self._said))
        with self._quietly():
            self.inputs["kind"].value = "own"
        self._on_input(notices=notices, new_data=new)

    def _pick(self, **fields) -> None:
        """A click on the stability map: go to that cell's lr and B, or lr and momentum (with the
        momentum optimizer, whose runs the lr x momentum map shows)."""
        if "momentum" in fields:
            fields["optimizer"] = "momentum"
        self.apply(self.settings._replace(**fields))

    @batched
    def _on_script(self, change=None) -> None:
        self.exports.show_script(self.script if self.script_button.value else None)

    @batched
    def _on_with_view(self, change=None) -> None:
        self.share.value = self._share_link()

    @batched
    def _export(self, kind: str) -> None:
        """A download link for the current run: its numbers (CSV) or every chart (HTML)."""
        if kind == "csv":
            self.exports.offer_csv(self.result, table=self._table)
        else:
            names = self.drawn
            figures = [*(self.figures[name] for name in names), self.stability.figure]
            captions = [caption(name, self.result, self.settings.loss) for name in names]
            wide = [i for i, name in enumerate([*names, "stability"]) if name in WIDE]
            self.exports.offer_charts(figures, self.settings, captions, wide)

    def _move_step(self, step: int) -> None:
        self.playback.move(step)

    def _set_step_range(self, n: int) -> None:
        self.step = n
        with self._quietly():
            self.playback.set_range(n)

    def _render(self, view: str) -> None:
        """The current result on every chart, its caption and the status line; each chart's new
        points and its words (`_describe`) go in one message."""
        self.status.value = status = self._status_text()
        words = plain_text(status)
        self._show_model_charts()
        # The other model's chart is hidden and left alone, but when the model changes: then it
        # takes the empty picture a result of this model gives it, as if built now.
        switched, self._model_drawn = self._model_drawn != self.settings.model, self.settings.model
        for name in CHARTS if switched else self.drawn:
            chart, figure = CHARTS[name], self.figures[name]
            with figure.hold_sync():
                chart.update(figure, self.result, view, self.step)
                self._describe(name, view, words)
        for name, text in self.captions.items():
            text.value = html.escape(caption(name, self.result, view))

    def _describe(self, name: str, view: str, words: str) -> None:
        """A chart's text alternative: its title, its caption's numbers, and the run in `words`."""
        figure = self.figures[name]
        if name not in self.drawn:
            figure.alt = ""  # hidden: nothing to announce
            return
        title = plain_text(figure.get("title.text") or "")
        figure.alt = alt_text(title, caption(name, self.result, view), words)

    def draw_step(self, fn, timeout: float = DEFAULT_TIMEOUT):
        """Draw `fn`, a learner's function for one of the exercises, over the lesson's loop at every
        move, `timeout` seconds at most a path (widgets.your_loop.YourLoop); returns the trajectory
        and landscape under where they part. A served page runs no visitor's code: it says so."""
        if self.stills:  # markup, not a widget: no model more for every visitor's page
            return HTML(SERVED_NOTE)
        self.yours = YourLoop(fn, self.words, self.yours, timeout)
        settings = self.yours.settings(self.settings)
        with self._quietly():
            for name, widget in self.inputs.items():
                widget.value = getattr(settings, name)
        self._on_input(new_data=True)
        return self.access.hidden_in(self.yours.shown(self.figures, self.beside, self._on_projector))

    def _compute(self, settings: Settings) -> Result:
        """The run of `settings`, with the learner's loop beside it when there is one."""
        result = self.model.compute(settings)
        return result if self.yours is None else self.yours.beside(result, self.model.batches(settings))

    # Words ------------------------------------------------------------------------------------

    def _show_texts(self, notices, from_controls: bool = False, kept: int | None = None) -> None:
        """The page's words for the run and `notices`; the first `kept` of them (all by default)
        stand until the next move's."""
        self._said = list(notices[:kept])
        self.step_info.value = step_html(self.result, self.step)
        self.share.value = self._share_link()
        self.notice.value = notices_html(notices)
        self.control_notice.value = text = notices_html(notices) if from_controls else ""
        self.control_notice.layout.display = None if text else "none"  # no empty row in the panel
        show_used(self.inputs, self.settings, self.presentation.hide, self.momentum_note, self.flag_notes)
        self.own_data.show(self.settings)
        offered = self.result.standardized_lr is not None and "standardize" not in self.presentation.hide
        self.standardize_button.layout.display = None if offered else "none"
        if self.script_button.value:
            self._on_script()
        self.export_links.value = ""  # an export is of the run it was made from

    def _share_link(self) -> str:
        """The page's address with the run's query, and its view when `with_view` is ticked."""
        look = self.presentation if self.exports.with_view.value else DEFAULT_PRESENTATION
        return self.base_url + "?" + to_query(self.settings, look)

    def _status_text(self) -> str:
        """The status line (`widgets.words.status_html`), made once per move: the charts' text
        alternatives take it as plain text."""
        return status_html(self.result, standardize="standardize" not in self.presentation.hide)


__all__ = ["CODE", "FAST", "LESSON", "REGIME_WORDS", "WIDE", "Explorer"]
