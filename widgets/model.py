"""What the charts show, computed by `core` for one `Settings`; no UI here.

`Model.compute` caches what depends only on the data: the largest data set of a seed, kind, true_w
and noise, drawn and padded once (every N and B is its corner), and the moments, w* and critical
learning rates of its last DATA_KEPT (N, B). Moving lr or w0 reruns only the compiled engine and the
closed forms over the cached moments; so does moving N or B back to a recent value.
`Model.stability` computes the stability map (on the panel's worker thread) from the same padded
data: lr x B, or lr x momentum at the current B.

Both models' runs are `core.pytree_histories`', of the params {"w"} or {"w", "b"} (`params`).
Under the w, b model (`Settings.model`) the theory has an intercept, and the result holds the
plane's picture: the frame around the runs and the loss's contours in it, kept while the data and
the frame hold. x_mean and true_b shift the same draws (no new draw); under the lesson's w they are
ignored.
"""

from __future__ import annotations

import collections
import threading
from typing import NamedTuple

import numpy as np

import core
from core.contours import Contours, loss_contours, nearest_minimum, valley_path, valley_ratio
from widgets.rows import Rows, stitched_map
from widgets.settings import RANGES, Settings, leaves, of_rows, reads

LOSSES = ("sum", "mean")
LANDSCAPE_POINTS = 241


def _distinct_geometric(low: int, high: int, count: int) -> np.ndarray:
    """`count` distinct integers from low to high, spaced geometrically where the integers allow."""
    values = np.rint(np.geomspace(low, high, count)).astype(np.int64)
    for i in range(1, count):
        values[i] = max(values[i], values[i - 1] + 1)
    for i in range(count - 2, -1, -1):  # pull back from the top if the bumps overshot it
        values[i] = min(values[i], values[i + 1] - 1)
    return values


# The stability map's grid: 64 learning rates over the lr slider's range, 32 batch sizes over B's.
MAP_LRS = np.geomspace(*RANGES["lr"], 64)
MAP_BATCH_SIZES = _distinct_geometric(*RANGES["B"], 32)
# The lr x momentum map's rows: 0 to 0.99 in steps of 0.03, each a value of the momentum slider.
MAP_MOMENTA = np.round(np.linspace(RANGES["momentum"][0], RANGES["momentum"][1], 34), 2)


CONTOURS = 12
"""Level curves drawn over (w, b): heights above the minimum spaced by factors of CONTOUR_RATIO
down from the frame's highest corner, so the floor of a narrow valley has curves as well as its walls."""
CONTOUR_RATIO = 2.5


class Result(NamedTuple):
    """Everything the charts need for one setting; both losses are always computed so that
    choosing which one is shown reuses this result."""

    settings: Settings
    histories: dict  # loss -> core.PytreeHistory: params {leaf: (N+1,)}, losses (N,), grads {leaf: (N,)}
    w_star: float
    critical_lr: dict  # loss -> float
    factors: dict  # loss -> (N,) float64, 1 - c*lr*S_k
    regimes: dict  # loss -> str, core.regime
    landscape_w: np.ndarray  # (LANDSCAPE_POINTS,)
    landscape_loss: np.ndarray  # average loss per example over all N*B examples
    w_star_loss: float  # the average loss at w*, the bottom of the landscape
    path_loss: dict  # loss -> average loss at each weight of that run, (N+1,); {} under w, b
    # loss -> core.PytreeHistory of the chosen optimizer and schedule (`overlaid`), else None
    optimized: dict | None = None
    schedule: np.ndarray | None = None  # (N,) float32: step k's learning rate, when not constant
    # The w, b model's (None under "w"): b* (w_star is w*), and the picture over (w, b).
    b_star: float | None = None
    plane: Plane | None = None
    # loss -> (core.contours.ValleyPath of SGD's run, of the overlaid run or None): how each path
    # crosses the valley's floor (the w, b model's; None under "w").
    valley_paths: dict | None = None
    rows_fit: RowsFit | None = None  # data of rows: the star's rows against all of them
    # Data of rows whose run of a shown loss diverges with x as it is, and would not with x
    # standardised: that loss -> the critical lr then (what ticking "standardize" allows); else None.
    standardized_lr: dict | None = None
    yours: Yours | None = None  # a learner's loop beside the lesson's (Explorer(step=fn))


class Yours(NamedTuple):
    """A learner's loop drawn on the explorer's charts (Explorer(step=fn), widgets.explore).

    carries: float64 (steps + 1, leaves): the learner's carry after each step, row 0 the start.
    parted: the first step at which it parts from the lesson's loop, or None.
    """

    carries: np.ndarray
    parted: int | None


class RowsFit(NamedTuple):
    """Data of rows: the star (w_star, b_star) is the least-squares fit of the `used` rows the run
    reads (N x B of them, some twice under replace); `star` is the fit of all `rows` of the table
    ({leaf: float}, x standardised as the run's is)."""

    used: int
    rows: int
    star: dict


class Plane(NamedTuple):
    """The loss over (w, b) around the w, b model's runs: what the contour chart draws.

    w_range, b_range: [low, high] of the frame (kept while the paths fill it, as the landscape's).
    contours: the level curves in the frame, `levels` the average loss on each (float64).
    floor: the average loss at the minimum the runs head for (w*, b*).
    """

    w_range: list
    b_range: list
    contours: Contours
    floor: float
    valley: float  # core.contours.valley_ratio: how much steeper the valley's walls are than its floor
    x_centre: float = 0.0  # the mean of the run's x: where the data are centred (data of rows)


KEEP_RANGE = 0.6
"""An axis keeps its range while the new values fit in it and span at least this share of it: a
slider then moves the lines on steady axes, and the axes are not redrawn on every move."""


HEADROOM = 0.15
"""When values leave an axis's range, the new range has this share of their span to spare on each
side they left by: values that grow a little with each move of a slider then stay inside for a
while."""


def kept_range(previous, new: list[float]) -> list[float]:
    """`previous` while `new` fits in it and fills at least KEEP_RANGE of it; `new` when it fills
    too little of it. When `new` does not fit, each side it leaves by moves out to it with
    HEADROOM to spare, and the other side stays (or, if `new` would then fill too little, moves to
    `new`'s): a step of a slider back and forth then keeps one range."""
    if previous is None or len(previous) != 2:
        return new
    low, high = previous
    if low <= new[0] and new[1] <= high:
        return [low, high] if new[1] - new[0] >= KEEP_RANGE * (high - low) else new
    spare = HEADROOM * (new[1] - new[0])
    wider = [new[0] - spare if new[0] < low else low, new[1] + spare if new[1] > high else high]
    if new[1] - new[0] >= KEEP_RANGE * (wider[1] - wider[0]):
        return wider
    return [wider[0] if new[0] < low else new[0], wider[1] if new[1] > high else new[1]]


def params(s: Settings) -> dict:
    """The run's starting params, a leaf per feature of the model: {"w": w0}, or {"w": w0, "b": b0}."""
    return {leaf: getattr(s, f"{leaf}0") for leaf in leaves(s)}


def overlaid(s: Settings) -> bool:
    """Whether the charts overlay a run of another optimizer or schedule on plain SGD's."""
    return s.optimizer != "sgd" or s.schedule != "constant"


STAR_ROOM = 0.3
"""The contour chart's frame holds (w*, b*) plus and minus this share of the start's distance from it,
on each axis: the innermost level curves close around the star instead of leaving the frame."""


LANDSCAPE_BAND = 10.0
"""How far the landscape frames a diverging run: the weights within this many times its starting
distance to w* (at least 1). Framed up to the divergence limit (a million times that distance), the
curve's frame spanned 5e6 and its loss axis 2e13 ("30T"): the bowl and every step drawn on it
vanished into a flat line. The run's later steps are off the chart, and the chart says from where."""


def framed_weights(history: core.PytreeHistory, w_star: float) -> np.ndarray:
    """The weights of a run the landscape frames: all of them, or for a diverging run those within
    LANDSCAPE_BAND times its starting distance to w* (at least 1) of w*."""
    weights = history.params["w"].astype(np.float64)
    weights = weights[np.isfinite(weights)]
    if history.diverged_at is not None:
        band = LANDSCAPE_BAND * max(abs(weights[0] - w_star), 1.0)
        weights = weights[np.abs(weights - w_star) <= band]
    return weights


class _Full(NamedTuple):
    key: tuple
    batches: core.PaddedBatches  # the float32 data on the device, (max N, max B)
    x: np.ndarray  # the same arrays read by NumPy, without a copy (core.moments sums them in float64)
    y: np.ndarray


class _Data(NamedTuple):
    moments: core.Moments
    batches: core.PaddedBatches
    w_star: float
    critical_lr: dict
    b_star: float | None = None  # the w, b model's


DATA_KEPT = 64
"""How many (N, B) corners of the current data set the model keeps the theory of (about 24 KB each
at N = 1000): a slider moved back and forth finds its earlier values' w* and moments again."""


class Model:
    """The compiled engine and the data of the current setting, computed by `core`."""

    def __init__(self):
        max_n, max_b = RANGES["N"][1], RANGES["B"][1]
        self.engine = core.HistoryEngine(max_steps=max_n, max_batch=max_b)
        self.engine.warm_up()
        self.rows = Rows()  # the example data set and the visitor's own (kinds "engel", "own")
        self._full = None  # _Full: the data of the current data_key (seed, kind, true_w, noise, ...)
        # ((seed, kind), core.Draws) of _full once a second data set of them is drawn (_full_for):
        # x_mean and true_b need no new draw then; None before.
        self._draws = None
        # (N, B) -> _Data: what each recent corner of one data set adds, the latest last; that data
        # set's data_key. One data set's only: another's would keep its arrays.
        self._data: collections.OrderedDict = collections.OrderedDict()
        self._data_of = None
        self._map = None  # (key, core.StabilityMap): the last lr x B map computed
        self._momentum_map = None  # (key, core.MomentumMap): the last lr x momentum map computed
        self._frame = None  # [low, high]: the landscape's last frame of w
        self._plane_frame = None  # [[w low, w high], [b low, b high]]: the contour chart's last frame
        self._picture = None  # (key, Plane): the plane's last picture, kept while its key holds
        self._rows_star = None  # ((rows key, leaves), {leaf: float}): the last table's whole fit
        # The map is computed on a worker thread (widgets.stability) while the explorer computes
        # results on the main one: the caches they share are changed under these locks.
        self._full_lock = threading.Lock()
        self._map_lock = threading.Lock()

    @property
    def frame(self) -> list[float] | None:
        """The landscape's range of w, [low, high], as the last run left it; None before the first.
        The next run keeps it while its paths fill it (`kept_range`)."""
        return None if self._frame is None else list(self._frame)

    @frame.setter
    def frame(self, value: list[float] | None) -> None:
        self._frame = None if value is None else [float(value[0]), float(value[1])]

    def data_key(self, s: Settings) -> tuple:
        """What the data set depends on: generated, its every (N, B) is a corner of the largest
        one; of rows, the table, seed and flags (`Rows.key`). x_mean and true_b are the w, b
        model's: under "w" the data are the lesson's, whatever they say."""
        if of_rows(s):
            return self.rows.key(s)
        shift = tuple(getattr(s, name) if reads(s, name) else 0.0 for name in ("x_mean", "true_b"))
        return (s.seed, s.kind, s.true_w, s.noise, *shift)

    def theory_key(self, s: Settings) -> tuple:
        """What the kept theory of an (N, B) corner depends on: the data set and the model."""
        return (*self.data_key(s), s.model)

    def map_key(self, s: Settings) -> tuple:
        """What the stability map depends on: its rows (`s.map`), N, the start's params (the model's
        leaves) and the data; B too for the lr x momentum map. Not lr, momentum or the loss, which
        only move its marker."""
        key = (s.map, s.N, *params(s).items(), *self.data_key(s))
        return key + (s.B,) if s.map == "momentum" else key

    @staticmethod
    def _map_slot(s: Settings) -> str:
        """The attribute that keeps the last map of `s.map`'s kind, as (map_key, map)."""
        return "_momentum_map" if s.map == "momentum" else "_map"

    def stability(self, s: Settings) -> core.StabilityMap | core.MomentumMap:
        """The stability map around `s` (its N, w0 and data), both losses: lr x B, or lr x momentum
        at s.B when s.map is "momentum". The last one of each is kept, so asking again for the same
        key costs nothing, and switching between the two costs nothing either."""
        with self._map_lock:
            found = self.kept_stability(s)
            if found is None:
                # The key and the table first: a visitor's new file may come while this runs (on
                # the worker), and the map is kept under the data it was computed from.
                key, table = self.map_key(s), self.rows.table(s.kind) if of_rows(s) else None
                if s.map == "momentum":
                    batches = (
                        self.engine.pad(*self.rows.cut(s, table=table))
                        if table
                        else self._full_for(s).batches
                    )
                    found = self._momentum_map_of(s, batches)
                elif table is not None:
                    # Each batch size on its own cut of the rows, blank where they cannot fill it.
                    columns = [
                        self._map_of(s, self.engine.pad(*self.rows.cut(s, int(b), table)), [int(b)])
                        if self.rows.fills(s, b, table)
                        else None
                        for b in MAP_BATCH_SIZES
                    ]
                    found = stitched_map(columns, MAP_LRS, MAP_BATCH_SIZES)
                else:
                    found = self._map_of(s, self._full_for(s).batches, MAP_BATCH_SIZES)
                setattr(self, self._map_slot(s), (key, found))
            return found

    @staticmethod
    def _map_of(s: Settings, batches: core.PaddedBatches, batch_sizes) -> core.StabilityMap:
        """The lr x B map of `batches` at `batch_sizes`, for `s`'s model and start."""
        return core.stability_map(batches, MAP_LRS, batch_sizes, params0=params(s), n=s.N)

    @staticmethod
    def _momentum_map_of(s: Settings, batches: core.PaddedBatches) -> core.MomentumMap:
        """The lr x momentum map of `batches` at s.B, for `s`'s model and start."""
        return core.momentum_map(batches, MAP_LRS, MAP_MOMENTA, batch_size=s.B, params0=params(s), n=s.N)

    def kept_stability(self, s: Settings) -> core.StabilityMap | core.MomentumMap | None:
        """The map `stability(s)` returns when it is kept already (the last of its kind), else None.
        Never waits: a map being computed on the worker holds `stability`'s lock, not this."""
        kept = getattr(self, self._map_slot(s))  # one tuple, set whole
        return kept[1] if kept is not None and kept[0] == self.map_key(s) else None

    def _full_for(self, s: Settings) -> _Full:
        """The largest (N, B) data set of `s`'s seed, kind, true_w and noise, drawn and padded once.

        make_batches is prefix-stable and elementwise, so the data of every smaller (N, B) is its
        top-left corner, bit for bit: moving N or B draws, computes and copies nothing new.
        """
        key = self.data_key(s)
        with self._full_lock:
            if self._full is None or self._full.key != key:
                max_n, max_b = RANGES["N"][1], RANGES["B"][1]
                _, _, _, _, x_mean, true_b = key
                drawn = (s.seed, s.kind)
                kept = self._draws
                if kept is not None and kept[0] == drawn and (kept[1].eps is not None or not s.noise):
                    draws = kept[1]  # x_mean, true_b, or a noise these draws hold: no draw
                else:
                    # Data of noise 0 (most presets) reads no eps: half a gaussian draw (16 ms on 2
                    # cores), and no draw at all for kind "ones".
                    draws = core.draw_batches(max_n, max_b, seed=s.seed, kind=s.kind, with_eps=bool(s.noise))
                    # The float64 draws are 4 or 8 MB, and most kernels never draw a second data set of
                    # them: they are kept from the second on (a visitor moving true_w, noise, x_mean
                    # or true_b; each later move then draws nothing), not by every waiting kernel.
                    again = self._full is not None and self._full.key[:2] == drawn
                    self._draws = (drawn, draws) if again else None
                x, y = core.batches_from_draws(
                    draws, max_n, max_b, true_w=s.true_w, noise=s.noise, x_mean=x_mean, true_b=true_b
                )
                batches = self.engine.pad(x, y)
                # Views of the device's buffers on the CPU, not copies: 8 MB less in each kernel
                # than the float64 copies kept before, and a B move no slower (core.moments
                # widens to float64 as it sums).
                self._full = _Full(key, batches, np.asarray(batches.x), np.asarray(batches.y))
            return self._full

    def batches(self, s: Settings) -> tuple[np.ndarray, np.ndarray]:
        """The float32 (N, B) batches x and y that `s`'s run reads, as NumPy arrays (widgets.explore
        hands them to a learner's function)."""
        if of_rows(s):
            return self.rows.cut(s)
        full = self._full_for(s)
        return full.x[: s.N, : s.B], full.y[: s.N, : s.B]

    @staticmethod
    def _data_for(s: Settings, x: np.ndarray, y: np.ndarray, batches: core.PaddedBatches) -> _Data:
        """The float64 theory of `s`'s (N, B) batches x, y (NumPy: it runs while the scan does)."""
        moments = core.moments(x, y)
        intercept = "b" in leaves(s)  # the feature 1 beside x
        star = core.optimum(moments, intercept=intercept)
        w_star, b_star = star if intercept else (star, None)
        return _Data(moments, batches, w_star, core.critical_lrs(moments, intercept=intercept), b_star)

    def compute(self, s: Settings) -> Result:
        corner, data_set = (s.N, s.B), self.theory_key(s)
        if data_set != self._data_of:
            self._data.clear()
            self._data_of = data_set
        data = self._data.get(corner)
        if data is not None:
            self._data.move_to_end(corner)
            batches = data.batches
        elif of_rows(s):  # cut on its own (widgets.rows), s fitted to the rows by the caller
            x, y = self.rows.cut(s)
            batches = self.engine.pad(x, y)
        else:
            full = self._full_for(s)
            batches = self.engine.corner(full.batches, s.N, s.B)
            x, y = full.x[: s.N, : s.B], full.y[: s.N, : s.B]
        start = params(s)
        # The scan is dispatched first and collected last: JAX runs it on its own threads while the
        # NumPy theory below is computed.
        collect = core.pytree_start(start, s.lr, batches)
        if data is None:
            data = self._keep(corner, self._data_for(s, x, y, batches))
        intercept = "b" in start
        factors, regimes = {}, {}
        for loss in LOSSES:
            factors[loss] = core.step_factors(s.lr, data.moments, loss=loss, intercept=intercept)
            regimes[loss] = core.regime(s.lr, data.moments, loss=loss, intercept=intercept)
        optimized = schedule = None
        if overlaid(s):
            schedule = None if s.schedule == "constant" else core.lr_schedule(s.schedule, s.lr, s.N)
            optimized = core.pytree_histories(
                start, s.lr, batches, optimizer=s.optimizer, momentum=s.momentum, lr_schedule=schedule
            )
        histories = collect()
        rows_fit = self._rows_fit(s) if of_rows(s) else None
        rescue = None
        shown = LOSSES if s.loss == "both" else (s.loss,)
        if rows_fit is not None and any(regimes[loss] == "diverging" for loss in shown):
            # Kept for the shown losses it would rescue at this lr (standardising can also narrow
            # the range of a small x), None for none.
            critical = self._standardized_lr(s) or {}
            rescue = {
                loss: lr for loss, lr in critical.items()
                if loss in shown and regimes[loss] == "diverging" and lr > s.lr
            } or None  # fmt: skip
        if intercept:
            result = self._on_plane(s, data, histories, factors, regimes, optimized, schedule)
            return result._replace(rows_fit=rows_fit, standardized_lr=rescue)
        # The landscape frames both runs (a diverging one near w* only) and w*, with a margin.
        span = np.concatenate(
            [framed_weights(h, data.w_star) for h in histories.values()] + [[data.w_star, s.w0]]
        )
        span = span[np.isfinite(span)]
        low, high = float(span.min()), float(span.max())
        margin = max(0.1 * (high - low), 0.5)
        # The frame stays while the paths fill it (kept_range): a slider then moves the paths on
        # steady axes, which the browser draws without redrawing the chart.
        self._frame = kept_range(self._frame, [low - margin, high + margin])
        landscape_w = np.linspace(*self._frame, LANDSCAPE_POINTS)
        landscape_loss = core.average_loss(landscape_w, data.moments)
        path_loss = {loss: core.average_loss(h.params["w"], data.moments) for loss, h in histories.items()}
        return Result(
            s,
            histories,
            data.w_star,
            data.critical_lr,
            factors,
            regimes,
            landscape_w,
            landscape_loss,
            float(core.average_loss(data.w_star, data.moments)),
            path_loss,
            optimized,
            schedule,
            rows_fit=rows_fit,
            standardized_lr=rescue,
        )

    def _standardized_lr(self, s: Settings) -> dict | None:
        """loss -> the critical lr of `s`'s rows with x standardised, when it is not and can be
        (x of more than one value); else None."""
        table = self.rows.table(s.kind)
        if s.standardize or not np.ptp(table.x) > 0:
            return None
        x, _ = self.rows.cut(s._replace(standardize=True), table=table)
        return core.critical_lrs(core.moments(x), intercept="b" in leaves(s))

    def _rows_fit(self, s: Settings) -> RowsFit:
        """`RowsFit` of `s`, data of rows that fit it (`Rows.fit`): the whole table's least-squares
        fit is kept while the table, the seed, the flags and the model stay."""
        table = self.rows.table(s.kind)
        rows = table.x.size
        key = (self.rows.key(s), leaves(s))
        if self._rows_star is None or self._rows_star[0] != key:
            # Every row once, as the run reads them (standardised or not, float32).
            x, y = self.rows.cut(s._replace(N=1, B=rows, replace=False), table=table)
            intercept = "b" in leaves(s)
            star = core.optimum(core.moments(x, y), intercept=intercept)
            self._rows_star = (key, dict(zip(leaves(s), star if intercept else (star,), strict=True)))
        return RowsFit(s.N * s.B, rows, self._rows_star[1])

    def _keep(self, corner: tuple, data: _Data) -> _Data:
        """Keep `data` as `corner`'s theory, the latest, and forget the oldest past DATA_KEPT."""
        self._data[corner] = data
        while len(self._data) > DATA_KEPT:
            self._data.popitem(last=False)
        return data

    def _on_plane(self, s: Settings, data: _Data, histories, factors, regimes, optimized, schedule) -> Result:
        """`compute`'s result for the w, b model: the 2-D theory and the plane's picture."""
        # Where the runs head: (w*, b*), or when every x is alike the floor's point nearest the start.
        centre = nearest_minimum(data.moments, (s.w0, s.b0))
        plane = self._plane(s, data.moments, centre, [*histories.values(), *(optimized or {}).values()])
        paths = {
            loss: tuple(
                None if run is None else valley_path(data.moments, centre, run.params["w"], run.params["b"])
                for run in (histories[loss], (optimized or {}).get(loss))
            )
            for loss in LOSSES
        }
        empty = np.zeros(0)
        return Result(
            s,
            histories,
            centre[0],
            data.critical_lr,
            factors,
            regimes,
            empty,
            empty,
            plane.floor,
            {},  # path_loss: the L(w) landscape's, which the w, b model does not draw
            optimized,
            schedule,
            centre[1],
            plane,
            paths,
        )

    def _plane(self, s: Settings, moments: core.Moments, centre: tuple, runs: list) -> Plane:
        """The frame around the runs (a diverging one's first steps only), the start and the
        minimum, kept while they fill it; and the loss's contours in it."""
        # Room around the star, a share of the start's distance each way, for closed ellipses: with
        # the paths alone the star sat on the frame's edge, its ellipses cut into parallel lines.
        room = STAR_ROOM * np.abs(np.subtract((s.w0, s.b0), centre))
        points = [np.array([[s.w0, s.b0], centre, np.add(centre, room), np.subtract(centre, room)])]
        for run in runs:
            path = np.stack([run.params["w"], run.params["b"]], axis=1).astype(np.float64)
            path = path[np.all(np.isfinite(path), axis=1)]
            if run.diverged_at is not None:
                band = LANDSCAPE_BAND * max(float(np.hypot(*(path[0] - centre))), 1.0)
                path = path[np.hypot(*(path - centre).T) <= band]
            points.append(path)
        points = np.concatenate(points)
        frame = []
        for axis, kept in enumerate(self._plane_frame or (None, None)):
            low, high = float(points[:, axis].min()), float(points[:, axis].max())
            margin = max(0.1 * (high - low), 0.5)
            frame.append(kept_range(kept, [low - margin, high + margin]))
        self._plane_frame = frame
        # The picture depends on the data and the frame alone: an lr or w0 move on a kept frame
        # reuses it (and sends no contour, the same arrays being the same to widgets.surface).
        key = (self.theory_key(s), s.N, s.B, centre, *map(tuple, frame))
        if self._picture is not None and self._picture[0] == key:
            return self._picture[1]
        corners = np.array(np.meshgrid(*frame)).reshape(2, -1)
        floor = float(core.average_loss(centre[0], moments, b=centre[1]))
        top = float(np.max(core.average_loss(corners[0], moments, b=corners[1]))) - floor
        excess = top * CONTOUR_RATIO ** -np.arange(CONTOURS, dtype=np.float64) if top > 0 else []
        reach = 2.0 * max(frame[0][1] - frame[0][0], frame[1][1] - frame[1][0])
        contours = loss_contours(moments, centre, excess, reach=reach)
        levels = contours._replace(levels=contours.levels + floor)
        x_centre = float(np.sum(moments.sx) / (moments.sx.size * moments.batch_size))
        plane = Plane(frame[0], frame[1], levels, floor, valley_ratio(moments), x_centre)
        self._picture = (key, plane)
        return plane
