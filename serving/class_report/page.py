"""The class report as the teacher's page: per exercise how many students pass and a bar per named
mistake (and per other verdict), each listing its students; then the whole table. The same HTML is
written as report.html and served by `make class` at the teacher's link (serving.class_report.server),
where it takes the report again every minute (a box pauses it) and has a "Check now" button.
"""

from __future__ import annotations

import html
import time

from core.exercises.tasks import TASKS
from serving.class_report import STATES, cell_text

REFRESH = 60
"""Seconds between the server's checks of changed notebooks, and the served page's takes of them."""

_STYLE = """
body { font: 16px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1a1a1a; background: #fff; }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
.when { color: #444; margin: .5rem 0 1rem; }
.exercises { display: grid; grid-template-columns: repeat(auto-fit, minmax(18rem, 1fr)); gap: 1rem; }
section { border: 1px solid #ccc; border-radius: 6px; padding: .75rem 1rem; }
h2 { font-size: 1.1rem; margin: 0 0 .5rem; font-family: ui-monospace, monospace; }
.passed { font-weight: 600; margin: 0 0 .5rem; }
.bar { margin: .35rem 0; }
.track { background: #eee; height: .6rem; border-radius: 3px; }
.fill { background: #c5221f; height: .6rem; border-radius: 3px; }
.fill.pass { background: #188038; } .fill.other { background: #80868b; }
.who { color: #444; font-size: .9rem; }
.table { overflow-x: auto; margin-top: 1.5rem; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th[scope="row"] { white-space: nowrap; }
td.pass { background: #e6f4ea; } td.mistake, td.wrong, td.raised, td.timed-out { background: #fce8e6; }
td.not-attempted, td.missing, td.no-notebook { background: #f1f3f4; }
button { font: inherit; padding: .3rem .8rem; }
"""


def _bar(label: str, students: list, total: int, kind: str = "") -> str:
    width = 100 * len(students) / max(total, 1)
    who = ", ".join(students)
    return (
        f'<div class="bar"><div><b>{html.escape(label)}</b>: {len(students)}</div>'
        f'<div class="track" aria-hidden="true">'
        f'<div class="fill {kind}" style="width:{width:.1f}%"></div></div>'
        f'<div class="who">{html.escape(who)}</div></div>'
    )


def _section(task: str, counts: dict) -> str:
    total = counts["students"]
    bars = [_bar("pass", counts["passed"], total, "pass")] if counts["passed"] else []
    bars += [
        _bar(label, who, total, "other" if label in STATES else "") for label, who in counts["bars"].items()
    ]
    return (
        f"<section><h2>{html.escape(task)}</h2>"
        f'<p class="passed">{counts["pass"]} of {total} pass</p>{"".join(bars)}</section>'
    )


_KINDS = {state: state.replace(" ", "-") for state in STATES}  # a cell's class, by its state


def _cell(cell: dict) -> str:
    said = [message for _code, message, _hint in cell.get("failed", [])[:1]] + cell.get("notes", [])
    title = f' title="{html.escape(" ".join(said))}"' if said else ""
    kind = _KINDS.get(cell["state"], "raised")
    return f'<td class="{kind}"{title}>{html.escape(cell_text(cell))}</td>'


# The served page takes the report again in place, not by reloading (a <meta> refresh moves the
# reader back to the top and cannot be paused: axe-core's meta-refresh rule); the box pauses it.
_REFRESH_SCRIPT = """<script>
setInterval(async () => {
  if (!document.getElementById('again').checked) return;
  const answer = await fetch(location.href, {cache: 'no-store'}).catch(() => null);
  if (!answer || !answer.ok) return;
  const fresh = new DOMParser().parseFromString(await answer.text(), 'text/html');
  document.getElementById('report').replaceWith(fresh.getElementById('report'));
}, PERIOD);
</script>"""


def html_page(report, served: bool = False, token: str = "", every: float = REFRESH) -> str:
    """The page; `served` adds the "Check now" button (a form that posts the teacher's `token`) and
    the report taken again every `every` seconds."""
    snapshot = report.rows  # replaced whole by an update, never changed in place: one round's rows
    rows = list(snapshot.values())
    counts = report.counts(snapshot)
    when = time.strftime("%H:%M:%S", time.localtime(report.checked_at)) if report.checked_at else "not yet"
    controls = (
        f'<form method="post" action="check"><input type="hidden" name="token" value="{html.escape(token)}">'
        '<button type="submit">Check now</button> <label><input type="checkbox" id="again" checked> '
        f"Take the report again every {'minute' if every == 60 else f'{every:g} s'}</label></form>"
        + _REFRESH_SCRIPT.replace("PERIOD", str(round(every * 1000)))
        if served
        else ""
    )
    again = f"{report.rechecked} notebooks checked again in {report.seconds:.1f} s"
    table_head = "".join(f'<th scope="col">{html.escape(t)}</th>' for t in TASKS)
    table_rows = "".join(
        f'<tr><th scope="row">{html.escape(row.student)}</th>{"".join(_cell(row.cells[t]) for t in TASKS)}'
        f"<td>{html.escape(' '.join(row.notes))}</td></tr>"
        for row in rows
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>The class's answers</title><style>{_STYLE}</style></head><body><main>"
        f"<h1>The class's answers</h1>{controls}"
        f'<div id="report"><p class="when" role="status">'
        f"{len(rows)} students, checked at {when} ({again}).</p>"
        f'<div class="exercises">{"".join(_section(t, counts[t]) for t in TASKS)}</div>'
        '<div class="table"><table>'
        "<caption>Every student's verdict (hover a cell for the checker's words)</caption>"
        f'<thead><tr><th scope="col">student</th>{table_head}<th scope="col">notes</th></tr></thead>'
        f"<tbody>{table_rows}</tbody></table></div></div></main></body></html>"
    )
