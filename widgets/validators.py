"""Plotly's table of validator parameters, read entry by entry instead of whole.

Plotly builds the validator of a figure property the first time a figure sets it, from that
property's entry in plotly/validators/_validators.json. On the first one it loads the whole file
(10,118 entries, 3.2 MB): 13 MB of Python objects (a process's anonymous memory, before and after a
json.load of it) that a kernel keeps for its whole life, for the 200 or so entries the explorer's
figures use. `install` gives Plotly a table that knows
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
            if text[position : position + 1] == "}":
                raise ValueError(f"the validator table has a ',' before its '}}' at {position}")
        elif text[position : position + 1] != "}":
            raise ValueError(f"the validator table has no ',' or '}}' at {position}")
    if text[_SPACE.match(text, position + 1).end() :]:
        raise ValueError("the validator table has text after its object")
    return spans


class ValidatorTable(dict):
    """The entries of Plotly's validator table, each parsed from the file when first asked for.

    Plotly reads its table through `get` (plotly.validator_cache); `table[name]` works too. A parsed
    entry is kept: Plotly updates the parameters of some entries in place, as it does in its own
    table. Should the file change on disk (Plotly upgraded under running kernels), the rest of it is
    loaded whole then, instead of read at offsets that no longer hold."""

    def __init__(self, path: Path, spans: dict[str, tuple[int, int]], stamp: tuple | None = None):
        super().__init__()
        self.path = path
        self.spans = spans
        self.stamp = stamp if stamp is not None else _stamp(path)

    def __missing__(self, name):
        if name not in self.spans:
            raise KeyError(name)
        if _stamp(self.path) != self.stamp:
            for key, value in json.loads(self.path.read_text(encoding="utf-8")).items():
                self.setdefault(key, value)
            self.spans = {}
            return self[name]
        start, end = self.spans[name]
        with self.path.open("rb") as file:  # ASCII (see install): byte and character offsets agree
            file.seek(start)
            self[name] = json.loads(file.read(end - start))
        return dict.__getitem__(self, name)

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default


def _stamp(path: Path) -> tuple:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


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
        stamp = _stamp(path)
        data = path.read_bytes()
        if not data.isascii():
            return False
        spans = entry_spans(data.decode("ascii"))
    except (OSError, ValueError):
        return False
    ValidatorCache._json_cache = ValidatorTable(path, spans, stamp)
    return True
