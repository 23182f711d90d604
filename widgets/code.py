"""The code beside a chart: the source of the core functions that produced it, read from the
functions themselves with `inspect`, so it cannot drift from what runs."""

from __future__ import annotations

import html
import inspect

import ipywidgets as ipw
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from core.shown import SHOWN

# Inline styles: the page needs no stylesheet, in Voila, JupyterLab and an exported HTML file alike.
_FORMATTER = HtmlFormatter(noclasses=True, style="friendly", nobackground=True)
_BOX = (
    "max-height: 28em; overflow: auto; margin: 0; padding: 6px 10px; background: #f7f7f9; "
    "border: 1px solid #e1e1e8; border-radius: 4px; font-size: 12px; line-height: 1.35"
)


def qualified_name(function) -> str:
    """`module.name` as a reader would import or find it, e.g. core.training._scan_final."""
    function = inspect.unwrap(function)
    return f"{function.__module__}.{function.__qualname__}"


def source_html(function) -> str:
    """The highlighted source of one function (a jitted one is unwrapped first), as HTML with
    inline styles, headed by its qualified name."""
    source = inspect.getsource(inspect.unwrap(function))
    code = highlight(source, PythonLexer(), _FORMATTER)
    code = code.replace('<pre style="', '<pre style="margin: 0; ', 1)
    name = html.escape(qualified_name(function))
    # The box scrolls, so it takes the focus: a keyboard can scroll it too (WCAG 2.1.1).
    box = f'<div tabindex="0" style="{_BOX}">{code}</div>'
    return f'<div class="scanlab-code"><code>{name}</code>{box}</div>'


def code_view(functions, title: str | None = None) -> ipw.Accordion:
    """A closed accordion, "Code: ...", holding the source of `functions` (in order) one under the
    other. The HTML is built when the accordion is first opened, so a page with many panels sends
    no source until a reader asks for it."""
    functions = list(functions)
    names = ", ".join(qualified_name(f) for f in functions)
    body = ipw.HTML()
    accordion = ipw.Accordion(children=[body], selected_index=None)
    accordion.set_title(0, title or f"Code: {names}")

    def fill(change):
        if change["new"] == 0 and not body.value:
            body.value = "".join(source_html(f) for f in functions)

    accordion.observe(fill, names="selected_index")
    return accordion


# The core functions behind each chart, shown under it in closed parts (core.shown.SHOWN): the loop
# the lesson teaches, which a learner would write (core.lesson; tests/test_lesson.py checks that it
# gives the charts' numbers), then how the explorer makes it fast. The main charts all come from one
# run of the engine's kernel, both losses at once.
LESSON = "Code: the loop the lesson teaches"
FAST = "Code: how the explorer makes it fast"
PYTREE = 'Code: the loop with the carry a pytree {"w", "b"}'
TITLES = {"lesson": LESSON, "pytree": PYTREE, "engine": FAST, "theory": "Code: the theory"}
"""The title of each part of SHOWN."""
CODE = {
    name: tuple((TITLES[part], functions) for part, functions in SHOWN[name])
    for name in ("trajectory", "loss", "landscape", "plane", "sum_vs_mean", "divergence", "stability")
}
"""The explorer's charts' code: chart name -> ((title, functions), ...), in the order shown."""


def chart_code(names) -> list:
    """The code views under the named charts (CODE): one closed view per title, holding the
    functions of every named chart under that title, in order and each once, named in the title."""
    parts: dict = {}
    for name in names:
        # The landscape's place holds the w, b model's contour chart too (Explorer.show).
        for title, functions in CODE[name] + (CODE["plane"] if name == "landscape" else ()):
            parts.setdefault(title, []).extend(functions)
    views = []
    for title, functions in parts.items():
        functions = list(dict.fromkeys(functions))
        shown = ", ".join(inspect.unwrap(f).__name__ for f in functions)
        views.append(code_view(functions, f"{title} ({shown})"))
    return views
