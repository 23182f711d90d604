"""Plotly's validator table read entry by entry (widgets/validators.py): the same entries, the same
figures, and only the entries the figures use parsed in a kernel."""

import json
import os
import subprocess
import sys
from pathlib import Path

import plotly.validator_cache
import pytest

from widgets.validators import ValidatorTable, entry_spans

ROOT = Path(__file__).resolve().parent.parent
PLOTLYS_TABLE = Path(plotly.validator_cache.__file__).parent / "validators" / "_validators.json"


def test_every_entry_of_plotlys_table_is_read_as_plotly_reads_it():
    text = PLOTLYS_TABLE.read_text()
    whole = json.loads(text)
    spans = entry_spans(text)
    assert list(spans) == list(whole)
    table = ValidatorTable(PLOTLYS_TABLE, spans)
    for name, entry in whole.items():
        assert table.get(name) == entry, name
    assert table.get("no.such.property") is None and table.get("no.such.property", 3) == 3


def test_an_entry_is_parsed_once_and_kept():
    # Plotly updates the parameters of some entries in place (DataValidator, LayoutValidator).
    table = ValidatorTable(PLOTLYS_TABLE, entry_spans(PLOTLYS_TABLE.read_text()))
    table.get("data")["params"]["marker"] = "changed"
    assert table.get("data")["params"]["marker"] == "changed" and len(table) == 1


def test_the_table_reads_as_a_dict_and_follows_a_file_that_changed(tmp_path):
    path = tmp_path / "table.json"
    path.write_text('{"a": {"x": 1}, "b": [2]}')
    table = ValidatorTable(path, entry_spans(path.read_text()))
    assert table["a"] == {"x": 1} and table.get("c") is None
    with pytest.raises(KeyError):
        table["c"]
    # Plotly upgraded under a running kernel: the offsets no longer hold, the new file is read whole.
    path.write_text('{"c": 3,   "b": ["two"]}')
    assert table["b"] == ["two"] and table["c"] == 3 and table["a"] == {"x": 1}  # a: parsed before


def test_spans_of_any_json_object():
    text = ' {"a\\"b" : {"x": [1, "}"]} ,\n"c":2, "d": "e,f"}\n'
    spans = entry_spans(text)
    assert {name: json.loads(text[start:end]) for name, (start, end) in spans.items()} == json.loads(text)
    assert entry_spans("{}") == {}


@pytest.mark.parametrize(
    "text", ["", "[]", '{"a": 1', '{"a" 1}', '{"a": 1 "b": 2}', '{"a": 1} x', "{1: 2}", '{"a": 1,}']
)
def test_spans_refuse_what_is_not_one_json_object(text):
    with pytest.raises(ValueError):
        entry_spans(text)


PROBE = """
import hashlib, sys
if sys.argv[1] == "whole":  # Plotly's own table, loaded before widgets could install another
    import plotly.graph_objects as go
    go.Figure(go.Scatter(x=[1], y=[2]))
import plotly.io as pio
import plotly.validator_cache
import widgets
from widgets.explorer import CHARTS

explorer = widgets.Explorer(widgets.DEFAULTS._replace(N=300, B=64, lr=0.02, loss="both"))
explorer.stability.wait()
figures = [explorer.figures[name] for name in CHARTS] + [explorer.stability.figure]
table = plotly.validator_cache.ValidatorCache._json_cache
print(type(table).__name__, len(table))
print(hashlib.sha256("".join(pio.to_json(figure.figure()) for figure in figures).encode()).hexdigest())
"""


def test_a_kernel_parses_only_the_entries_its_figures_use_and_draws_the_same_figures():
    environment = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT)}
    runs = {
        how: subprocess.run(
            [sys.executable, "-c", PROBE, how], env=environment, cwd=ROOT, capture_output=True, text=True
        )
        for how in ("entries", "whole")
    }
    for how, run in runs.items():
        assert run.returncode == 0, (how, run.stderr[-2000:])
    (kind, count), figures = (line.split() for line in runs["entries"].stdout.splitlines()[-2:])
    assert kind == "ValidatorTable" and 100 < int(count) < 500  # of 10,118
    (kind, count), whole_figures = (line.split() for line in runs["whole"].stdout.splitlines()[-2:])
    assert kind == "dict" and int(count) > 10_000
    assert figures == whole_figures
