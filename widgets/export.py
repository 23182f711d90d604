"""Exports of the current run: its numbers as CSV (and, under data of rows, the rows as CSV too),
its charts as one standalone HTML file, the script; and the explorer's export bar that offers them
with the share link (`ExportBar`).

PNG stays in each chart's own toolbar (Plotly's camera button, widgets.surface.TOOLBAR)."""

from __future__ import annotations

import base64
import csv
import html
import io
import itertools

import ipywidgets as ipw
import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

import core
from widgets.figures import run_name
from widgets.layout import BESIDE
from widgets.model import LOSSES, Result
from widgets.script import DATA_FILENAME, FILENAME
from widgets.settings import Settings
from widgets.surface import TOOLBAR, Surface


def csv_header(leaves) -> str:
    """The run CSV's columns for a model of these leaves: each leaf, the loss, each leaf's gradient
    ("gradient" alone for one leaf), the lr."""
    gradients = ["gradient"] if len(leaves) == 1 else [f"gradient_{leaf}" for leaf in leaves]
    return ",".join(["run", "loss_mode", "step", *leaves, "loss", *gradients, "lr"])


CSV_HEADER = csv_header(["w"])  # "run,loss_mode,step,w,loss,gradient,lr"
PYTREE_CSV_HEADER = csv_header(["w", "b"])  # "...,w,b,loss,gradient_w,gradient_b,lr"


def _number(value) -> str:
    """float32 values written exactly (9 significant digits), inf and nan as Python writes them."""
    return f"{float(value):.9g}"


def run_csv(result: Result) -> str:
    """Every step of the runs on the charts, one row per (run, loss mode, step): plain SGD's ("sgd")
    and, when another optimizer or schedule is overlaid, that one's (named as on the trajectory's
    legend: "momentum 0.9", "sgd, cosine schedule"). w is the weight step k starts from, loss and
    gradient the batch's at that weight, lr the learning rate step k used; the last row of each
    (step N) has the final weight alone. Under the w, b model, w and b and their gradients
    (PYTREE_CSV_HEADER)."""
    s = result.settings
    runs = [("sgd", result.histories, np.full(s.N, s.lr))]
    if result.optimized is not None:
        rates = result.schedule if result.schedule is not None else runs[0][2]
        runs.append((run_name(s), result.optimized, rates))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(csv_header(list(result.histories["sum"].params)).split(","))
    for name, histories, rates in runs:
        for mode in LOSSES:
            h = histories[mode]
            # Each leaf's value, the loss, each leaf's gradient: the header's columns in its order.
            columns = (*h.params.values(), h.losses, *h.grads.values())
            for k, values in enumerate(zip(*columns, rates, strict=False)):
                writer.writerow([name, mode, k, *map(_number, values)])
            final = [leaf[-1] for leaf in h.params.values()]
            writer.writerow(
                [name, mode, len(h.losses), *map(_number, final), *[""] * (len(columns) - len(final) + 1)]
            )
    return out.getvalue()


def data_csv(table: core.Table) -> str:
    """The data of rows as a CSV file (DATA_FILENAME, which a script of more rows than it holds
    reads): a header row `x_name,y_name`, then each row's x and y in the file's order, every value
    as repr writes it. `core.parse_csv` reads it back to an identical table (x and y equal, the same
    names), and so to the same run; only names that are both written as numbers are not read back as
    a header."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([table.x_name, table.y_name])
    writer.writerows(zip(map(repr, table.x.tolist()), map(repr, table.y.tolist()), strict=True))
    return out.getvalue()


def file_stem(settings: Settings) -> str:
    """A file name for this run, e.g. scanlab_lr0.01_N100_B16_sum."""
    return f"scanlab_lr{settings.lr:.6g}_N{settings.N}_B{settings.B}_{settings.loss}"


# Each chart's width is set by the page alone, not by the charts after it: Plotly sizes a chart when
# its script runs, before the next chart is on the page.
_STYLE = (
    ".beside, .wide { display: inline-block; vertical-align: top; width: 100%; }"
    f" @media (min-width: {2 * int(BESIDE.removesuffix('px')) + 40}px) {{ .beside {{ width: 49.5%; }} }}"
)


def charts_html(figures, settings: Settings, link: str = "", captions=(), wide=()) -> str:
    """One HTML file holding every chart in `figures` (Surfaces or Figures), with plotly.js
    inside it: it opens offline, on a slide or a course site, and the charts stay interactive.
    `captions` (plain text, by position) go above their charts, as on the page; the charts at the
    positions in `wide` take a row each, the others stand two to a row where the window allows
    (widgets.figures.side_by_side)."""
    # Responsive: drawn again when the window changes size (a chart's layout has no width).
    config = {**TOOLBAR, "responsive": True}
    config["toImageButtonOptions"] = {"filename": file_stem(settings)}
    parts = []
    for i, (figure, caption) in enumerate(itertools.zip_longest(figures, captions, fillvalue="")):
        chart = pio.to_html(
            figure.figure() if isinstance(figure, Surface) else go.Figure(figure),
            full_html=False,
            include_plotlyjs=i == 0,
            config=config,
        )
        above = f'<p style="margin: 0 0 0 60px">{html.escape(caption)}</p>' if caption else ""
        parts.append(f'<div class="{"wide" if i in wide else "beside"}">{above}{chart}</div>')
    words = ", ".join(f"{name} = {value}" for name, value in settings._asdict().items())
    anchor = f'<p><a href="{html.escape(link, quote=True)}">Open this run in ScanLab</a></p>' if link else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>ScanLab: {html.escape(file_stem(settings))}</title><style>{_STYLE}</style></head>"
        '<body style="font-family: sans-serif">'
        f"<h1>ScanLab: the training loop as a lax.scan</h1><p>{html.escape(words)}</p>{anchor}"
        f"{''.join(parts)}</body></html>\n"
    )


def download_link(text: str, filename: str, mime: str) -> str:
    """An HTML anchor that saves `text` as `filename`, with its size."""
    data = text.encode("utf-8")
    encoded = base64.b64encode(data).decode("ascii")
    size = f"{len(data) / 1e6:.1f} MB" if len(data) >= 1e6 else f"{max(len(data) / 1e3, 0.1):.1f} kB"
    name = html.escape(filename, quote=True)
    return (
        f'<a download="{name}" href="data:{mime};charset=utf-8;base64,{encoded}">Download {name}</a> ({size})'
    )


def copy_button(label: str, text: str) -> str:
    """An HTML button that copies `text` (a JavaScript expression, evaluated in its click handler,
    `this` the button) to the clipboard and says "Copied" for two seconds. Where the page is not a
    secure context (a class's server reached over plain http by its address) the browser has no
    `navigator.clipboard`, and the text is copied through a selected, hidden textarea instead."""
    script = (
        f"const text = {text}; const done = () => {{ this.textContent = 'Copied';"
        f" setTimeout(() => {{ this.textContent = {label!r}; }}, 2000); }};"
        " if (navigator.clipboard) { navigator.clipboard.writeText(text).then(done); } else {"
        " const area = document.createElement('textarea'); area.value = text; document.body.append(area);"
        " area.select(); document.execCommand('copy'); area.remove(); done(); }"
    )
    handler = html.escape(script, quote=True)
    return f'<button class="scanlab-copy" onclick="{handler}">{html.escape(label)}</button>'


def script_links(script: str) -> str:
    """A download link and a copy button for `script` (ASCII, so atob gives it back as written)."""
    encoded = base64.b64encode(script.encode("ascii")).decode("ascii")
    return (
        f"{download_link(script, FILENAME, 'text/x-python')} &nbsp; "
        f"{copy_button('Copy to clipboard', f'atob({encoded!r})')}"
    )


SHARE_COPY = copy_button(
    "Copy link", "this.closest('.scanlab-share').querySelector('input[type=text]').value"
)
"""The share link's Copy button: it copies what the link's field holds when it is clicked."""


class ExportBar:
    """The explorer's share and export widgets: `share` (the link that reproduces the page) with
    its `copy` button and, on a page of another view than the default (`view=True`), `with_view`,
    which asks for the link to carry that view; `script_button` opening `script_box` (the run as a
    script, `script_text`, and its `script_links`), `csv_button` and `html_button`, and `links`,
    where an export's download link appears.

    `row` lists the widgets of the page's share row, `below` what goes under it. The explorer
    observes the buttons and calls `show_script` and `offer_*` with the current run."""

    def __init__(self, view: bool = False):
        self.share = ipw.Text(description="share link", disabled=False, layout={"width": "100%"})
        self.share.tooltip = "the URL that reproduces this state"
        self.share.style = {"description_width": "5.5em"}
        self.copy = ipw.HTML(SHARE_COPY)
        # A link for others reproduces the run; the look of this page (a projector's larger text,
        # hidden controls) is the teacher's to pass on, when asked.
        self.with_view = ipw.Checkbox(
            value=False,
            description="with this view",
            indent=False,
            tooltip="the link also sets this page's view and hidden controls (view=, hide=)",
            layout={"width": "auto", "display": None if view else "none"},
        )
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
        self.links = ipw.HTML()
        self.row = [self.share, self.copy, self.with_view]
        self.row += [self.script_button, self.csv_button, self.html_button]
        self.below = [self.links, self.script_box]

    def show_script(self, script: str | None) -> None:
        """Open the script box on `script` (the run as `widgets.script.training_script` writes it),
        or close it (None)."""
        self.script_box.layout.display = "none" if script is None else "flex"
        if script is not None:
            self.script_text.value = script
            self.script_links.value = script_links(script)

    def offer_csv(self, result: Result, table: core.Table | None = None) -> None:
        """A download link for the run's numbers (`run_csv`) and, given the `table` of data of
        rows, one beside it for those rows (`data_csv`, as DATA_FILENAME)."""
        stem = file_stem(result.settings)
        links = download_link(run_csv(result), f"{stem}.csv", "text/csv")
        if table is not None:
            links += " &nbsp; " + download_link(data_csv(table), DATA_FILENAME, "text/csv")
        self.links.value = links

    def offer_charts(self, figures, settings: Settings, captions=(), wide=()) -> None:
        """A download link for every chart in one HTML file (`charts_html`, with the share link)."""
        page = charts_html(figures, settings, self.share.value, captions, wide)
        self.links.value = download_link(page, f"{file_stem(settings)}.html", "text/html")
