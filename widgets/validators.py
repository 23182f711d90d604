"""Plotly's table of validator parameters, read entry by entry instead of whole.

Plotly builds the validator of a figure property the first time a figure sets it, from that
property's entry in plotly/validators/_validators.json. On the first one it loads the whole file
(10,118 entries, 3.2 MB): about 12 MB of Python objects that a kernel keeps for its whole life,
for the 250 or so entries the explorer's figures use. `install` gives Plotly a table that knows
where each entry lies in the file and parses an entry when Plotly first asks for it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

_SPACE = re.compile(r"[ \t\n\r]*")


def entry_spans(text: str) -> dict[str, tuple[int, int]]:
    """{name: (start, end)} of each entry of a JSON object: `text[start:end]` is the entry's value.

    Raises ValueError where `text` is not one JSON object."""
    decoder = json.JSONDecoder()
    position = _SPACE.match(text).end()
    if text[position : position + 1] != "{":
        raise ValueError("the validator table is not a JSON object")
    spans = {}
    position = _SPACE.match(text, position + 1).end()
    while text[position : position + 1] != "}":
        name, position = decoder.raw_decode(text, position)
        position = _SPACE.match(text, position).end()
        if not isinstance(name, str) or text[position : position + 1] != ":":
            raise ValueError(f"the validator table has no value for {name!r} at {position}")
        start = _SPACE.match(text, position + 1).end()
        _, end = decoder.raw_decode(text, start)  # parsed to find its end, then dropped
        spans[name] = (start, end)
        position = _SPACE.match(text, end).end()
        if text[position : position + 1] == ",":
            position = _SPACE.match(text, position + 1).end()
        elif text[position : position + 1] != "}":
            raise ValueError(f"the validator table has no ',' or '}}' at {position}")
    if text[_SPACE.match(text, position + 1).end() :]:
        raise ValueError("the validator table has text after its object")
    return spans


class ValidatorTable(dict):
    """The entries of Plotly's validator table, each parsed from the file when first asked for.

    Plotly reads its table only through `get` (plotly.validator_cache). A parsed entry is kept:
    Plotly updates the parameters of some entries in place, as it does in its own table."""

    def __init__(self, path: Path, spans: dict[str, tuple[int, int]]):
        super().__init__()
        self.path = path
        self.spans = spans

    def get(self, name, default=None):
        if name not in self and name in self.spans:
            start, end = self.spans[name]
            with self.path.open("rb") as file:  # ASCII (see install): byte and character offsets agree
                file.seek(start)
                self[name] = json.loads(file.read(end - start))
        return super().get(name, default)


def install() -> bool:
    """Give Plotly a `ValidatorTable` of its own file, unless it has loaded its table already or the
    file is not plain ASCII JSON (then Plotly loads it whole, as without this). Whether installed."""
    try:
        from plotly.validator_cache import ValidatorCache
    except ImportError:  # a Plotly without this table
        return False
    if getattr(ValidatorCache, "_json_cache", ()) is not None:
        return isinstance(ValidatorCache._json_cache, ValidatorTable)
    import plotly.validator_cache

    path = Path(plotly.validator_cache.__file__).parent / "validators" / "_validators.json"
    try:
        data = path.read_bytes()
        if not data.isascii():
            return False
        spans = entry_spans(data.decode("ascii"))
    except (OSError, ValueError):
        return False
    ValidatorCache._json_cache = ValidatorTable(path, spans)
    return True
