"""Data of rows: the example data set (kind "engel") and a visitor's own CSV file (kind "own"), cut
into the run's N batches of B by `core.batches_from_rows`. No UI here (widgets.own_data has it).

Generated data are drawn once at the largest (N, B) and every smaller (N, B) is its corner. Rows are
shuffled with the seed and cut B at a time, so batch k of B = 16 is not the first 16 of batch k of
B = 32: each (N, B) is cut on its own, and the lr x B stability map runs each of its batch sizes on
that size's own cut (`stitched_map`). Without `replace`, N x B may not exceed the rows: `fit`
lowers N (or B) to what the rows give, with a notice, and the map leaves blank the batch sizes that
the rows cannot fill N times.
"""

from __future__ import annotations

import numpy as np

import core
from widgets.settings import DEFAULTS, Settings, of_rows

EXAMPLE_FILE = "engel.csv"


class Rows:
    """The tables a page can run on: the example data set, read when first asked for, and the
    visitor's own, in the kernel's memory only (never on the server's disk) until the page closes.
    `version` counts the visitor's files: a new file is new data to every cache keyed on `key`."""

    def __init__(self):
        self._tables: dict = {"engel": None, "own": None}
        self.version = 0

    def table(self, kind: str) -> core.Table | None:
        """The `core.Table` of `kind` ("engel" or "own"), None when no file was given yet."""
        if kind == "engel" and self._tables["engel"] is None:
            self._tables["engel"] = core.load_example()
        return self._tables.get(kind)

    def use(self, table: core.Table) -> None:
        """Run on `table` (a visitor's file, parsed and checked) from now on, under kind "own"."""
        self._tables["own"] = table
        self.version += 1

    def key(self, s: Settings) -> tuple:
        """What the cut batches of `s` depend on, but N and B: the table, the seed and the two flags."""
        return (s.seed, s.kind, s.standardize, s.replace, self.version if s.kind == "own" else 0)

    def fit(self, s: Settings, previous: Settings = DEFAULTS) -> tuple[Settings, list[str]]:
        """`s` with what its rows cannot give replaced, and a notice per change: kind "own" before
        any file (the `previous` kind stays), standardize on an x of one value, and, without
        replace, an N x B beyond the rows (N lowered, and B too when one batch is more than them)."""
        if not of_rows(s):
            return s, []
        notices = []
        table = self.table(s.kind)
        if table is None:
            kind = previous.kind if previous.kind != "own" else DEFAULTS.kind
            notices.append(f"There is no CSV file of yours yet: choose one under “your data”. Using {kind}.")
            s, more = self.fit(s._replace(kind=kind), previous)  # that kind's rows may lower N too
            return s, notices + more
        rows = table.x.size
        if s.standardize and not np.ptp(table.x) > 0:
            notices.append(f"x ({table.x_name}) holds one value in every row: it cannot be standardised.")
            s = s._replace(standardize=False)
        if not s.replace and s.N * s.B > rows:
            b = min(s.B, rows)
            n = rows // b
            changed = f"B lowered to {b} and N to {n}" if b != s.B else f"N lowered to {n}"
            notices.append(
                f"N × B = {s.N} × {s.B} = {s.N * s.B:,} rows are needed and the data have {rows:,}: "
                f"{changed}, so that no row is used twice. Tick “replace” to use rows again instead "
                "(each pass over them in a new shuffle)."
            )
            s = s._replace(N=n, B=b)
        return s, notices

    def cut(self, s: Settings, b: int | None = None, table: core.Table | None = None) -> tuple:
        """(x_batches, y_batches) of `s`, float32 (N, B), or of batch size `b` instead of s.B, from
        `table` (default: s.kind's now); `s` must fit (`fit`)."""
        table = table if table is not None else self.table(s.kind)
        return core.batches_from_rows(
            table.x, table.y, s.N, s.B if b is None else b,
            seed=s.seed, replace=s.replace, standardize=s.standardize,
        )  # fmt: skip

    def fills(self, s: Settings, b: int, table: core.Table | None = None) -> bool:
        """Whether the rows (of `table`, default s.kind's now) give N batches of `b` (always with
        replace)."""
        return s.replace or s.N * b <= (table if table is not None else self.table(s.kind)).x.size


def stitched_map(columns: list, lrs: np.ndarray, batch_sizes: np.ndarray) -> core.StabilityMap:
    """One lr x B map of per-batch-size maps: `columns[k]` is the `core.StabilityMap` of
    batch_sizes[k] alone (one row), or None for a batch size the rows cannot fill, whose row is
    blank: error and critical lr NaN, nothing diverged."""
    losses = ("sum", "mean")
    blank_row = np.full((1, lrs.size), np.nan)
    log10_error = {
        loss: np.concatenate([c.log10_error[loss] if c is not None else blank_row for c in columns])
        for loss in losses
    }
    diverged = {
        loss: np.concatenate(
            [c.diverged[loss] if c is not None else np.zeros((1, lrs.size), bool) for c in columns]
        )
        for loss in losses
    }
    critical = {
        loss: np.array([c.critical_lr[loss][0] if c is not None else np.nan for c in columns])
        for loss in losses
    }
    return core.StabilityMap(np.asarray(lrs), np.asarray(batch_sizes), log10_error, diverged, critical)
