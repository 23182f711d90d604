"""The "your data" controls: a CSV file from the visitor's computer, its x and y columns, and a line
saying which rows the page runs on.

The browser reads the file and sends its bytes in one message (widgets/upload.js), refusing one
over `core.MAX_BYTES` before sending it. The kernel checks it with `core.parse_csv`, which answers
every problem with one sentence naming the row or column; a file that fails changes nothing (the
data and charts stay as they were). A good file's table is kept in the kernel's memory
(`widgets.rows.Rows`), never on the server's disk, and goes with the kernel when the page closes.
"""

from __future__ import annotations

import html
from importlib import resources

import anywidget
import ipywidgets as ipw
import traitlets

import core
from widgets.controls import Menu, labelled, pin
from widgets.rows import Rows
from widgets.settings import Settings

UPLOAD_JS = resources.files("widgets").joinpath("upload.js").read_text(encoding="utf-8")

UPLOAD_LABEL = "your data (CSV)"

STANDARDIZE_WHY = (
    "standardize: x becomes (x − mean) / std. With x far from 0, w and b pull on each other and the "
    "loss's valley is long and narrow (one lr cannot suit both); standardised, it is round."
)
REPLACE_WHY = "replace: when N × B is more than the rows, use rows again (a new shuffle each pass)."


NO_FILE = "no file in use"


class Upload(anywidget.AnyWidget):
    """A file control that sends the chosen file's bytes to the kernel (`on_msg`): a message
    {"kind": "file", "name", "size"} with the bytes as its one buffer, or {"kind": "too_big",
    "name", "size"} for a file over `max_bytes`, which the browser does not send. `chosen` is
    shown beside it: the file in use."""

    _esm = UPLOAD_JS
    description = traitlets.Unicode(UPLOAD_LABEL).tag(sync=True)
    max_bytes = traitlets.Int(core.MAX_BYTES).tag(sync=True)
    disabled = traitlets.Bool(False).tag(sync=True)
    chosen = traitlets.Unicode(NO_FILE).tag(sync=True)


def _size(size: int) -> str:
    """A file's size in MB, or in bytes where MB would read as the limit itself."""
    said = f"{size / 1e6:.1f} MB"
    return f"{size:,} bytes" if said == f"{core.MAX_BYTES / 1e6:.1f} MB" else said


def file_line(name: str, table: core.Table) -> str:
    """What a visitor's file gave, in a sentence (HTML-safe)."""
    skipped = ""
    if table.skipped:
        listed = ", ".join(f"“{n}”" for n in table.skipped[:5])
        skipped = f"; text only, left out: {listed}" + (" and more" if len(table.skipped) > 5 else "")
    return html.escape(
        f"In use: {name}, {table.x.size:,} rows, x = {table.x_name}, y = {table.y_name}{skipped}. "
        "It stays in this page's kernel and is gone when the page closes."
    )


EXAMPLE_LINE = html.escape(
    f"In use: {core.EXAMPLE_TITLE}, x = income, y = food spending, thousands of francs "
    "(source and licence: ScanLab's core/datasets/README.md)."
)


FILE_HINT = html.escape(
    f"A CSV file of two or more columns of numbers, a header row optional, at most "
    f"{core.MAX_BYTES / 1e6:g} MB and {core.own_data.MAX_ROWS:,} rows."
)
"""The line under the file control while the data are not a file's: what it takes."""


class OwnData:
    """The "your data" controls (`widget`): the file control, the x and y menus (shown for a file
    of more than two columns of numbers) and a line about the rows in use. `changed(notices, new)`
    is called after each file or choice of column: `new` when the rows changed (kind "own" now).
    A refused file's sentence also stands on the line, above the data in use, until the next file
    or another kind of data."""

    def __init__(self, rows: Rows, changed):
        self.rows = rows
        self._changed = changed
        self._name = ""  # the visitor's file's name, for the line about its rows
        self._busy = False
        self._refused = ""  # a refused file's sentence, said under the kind of data shown
        self._kind = ""  # the kind of data shown
        self.upload = Upload()
        self._pinned = {"max_bytes": core.MAX_BYTES, "description": UPLOAD_LABEL, "chosen": NO_FILE}
        pin(self.upload, self._pinned)
        self.x = labelled(Menu(options=[], description="x"), "the column of x")
        self.y = labelled(Menu(options=[], description="y"), "the column of y")
        self.columns = ipw.HBox([self.x, self.y], layout={"display": "none", "flex_flow": "row wrap"})
        self.line = ipw.HTML()
        self.line.add_class("scanlab-note")
        self.widget = ipw.VBox([self.upload, self.columns, self.line])
        self.upload.on_msg(self._received)
        for menu in (self.x, self.y):
            menu.observe(self._picked, names="value")

    def _received(self, _, content, buffers) -> None:
        if not isinstance(content, dict) or content.get("kind") not in ("file", "too_big"):
            return  # not a message the page sends
        name = str(content.get("name", "the file"))[:80] or "the file"
        if content["kind"] == "too_big" or (buffers and len(buffers[0]) > core.MAX_BYTES):
            size = len(buffers[0]) if buffers else content.get("size")
            said = f" is {_size(size)}" if isinstance(size, int) else " is too large"
            limit = f"{core.MAX_BYTES / 1e6:g} MB ({core.MAX_BYTES:,} bytes)"
            return self._refuse(f"{name}{said}; a file may be at most {limit}. The data stay as they were.")
        if len(buffers) != 1:
            return
        self._use(name, lambda: core.parse_csv(bytes(buffers[0])))

    def _use(self, name: str, read) -> None:
        """Run on the table `read()` returns, or say why not (its `DataError`) and change nothing."""
        try:
            table = read()
            core.batches_from_rows(table.x, table.y, 1, table.x.size, seed=0)  # every value fits float32
        except core.DataError as error:
            self._show_columns()  # the menus back to the table in use
            return self._refuse(f"{name}: {error} The data stay as they were.")
        self._name = name
        self._refused = ""
        self.rows.use(table)
        self._show_columns()
        self._changed([], True)

    def _refuse(self, sentence: str) -> None:
        self._refused = sentence
        self._changed([sentence], False)

    def _picked(self, change) -> None:
        table = self.rows.table("own")
        if self._busy or table is None or (self.x.value, self.y.value) == (table.x_name, table.y_name):
            return
        # Another column of the same table: its numbers were read and checked with the file.
        self._use(self._name, lambda: core.choose_columns(table, self.x.value, self.y.value))

    def _show_columns(self) -> None:
        table = self.rows.table("own")
        if table is None:
            return
        self._busy = True
        try:
            for menu, value in ((self.x, table.x_name), (self.y, table.y_name)):
                menu.options = list(table.names)
                menu.value = value
        finally:
            self._busy = False

    def show(self, settings: Settings) -> None:
        """The menus and the line for `settings`' kind of data (and a refused file's sentence, said
        under that kind)."""
        table = self.rows.table("own")
        own = settings.kind == "own" and table is not None
        self.columns.layout.display = None if own and len(table.names) > 2 else "none"
        self._pinned["chosen"] = f"{self._name} in use" if own else NO_FILE
        self.upload.chosen = self._pinned["chosen"]
        if own:
            line = file_line(self._name, table)
        elif settings.kind == "engel":
            line = EXAMPLE_LINE
        else:
            line = FILE_HINT
        if settings.kind != self._kind:  # other data: the refusal was about the last
            self._refused, self._kind = "", settings.kind
        if self._refused:
            line = f'<span class="scanlab-refused">&#9888; {html.escape(self._refused)}</span><br>{line}'
        self.line.value = line
