""" "Copy as script": the explorer's current run as a short standalone Python script.

The script needs only jax and numpy, and optax when the explorer overlays another optimizer or
schedule. Its data come from the same generator as the explorer's (`core.data._row_normals`,
pasted in from its source so the two cannot drift; so are `core.optimizers.schedule_function` and
`make_optimizer`), and its loop is the lesson's scan over the params dict ({"w": w}, or {"w": w,
"b": b}), written out again on purpose: a script that imports nothing of ours runs anywhere. It
prints the final params of each loss the explorer shows, and of the overlaid run
(tests/test_script.py runs it).

Under data of rows (the example data set, or a visitor's CSV file) there is no generator: the
script holds the rows themselves, or beyond EMBEDDED_ROWS reads them from the data CSV that Export
CSV offers (DATA_FILENAME), and cuts them into batches as `core.batches_from_rows` does, written out
in NumPy (tests/test_own_data_exports.py runs it).
"""

from __future__ import annotations

import inspect
import textwrap

import core
from core import data, optimizers
from core.model import FEATURES
from widgets.figures import run_name
from widgets.model import overlaid, params
from widgets.settings import Settings, of_rows, reads

_HEAD = '''"""A ScanLab run, exported from the explorer.{link}

The training loop of the lesson: one gradient step per microbatch, carried by jax.lax.scan.
Needs only {needs}:  python {filename}
{data_note}"""

import jax
import jax.numpy as jnp
import numpy as np
{optax_import}from jax import lax

# The explorer's settings
LR = {lr!r}  # learning rate
N = {N!r}  # steps, one microbatch each
B = {B!r}  # examples per microbatch
W0 = {w0!r}  # initial weight
'''
_TEMPLATE = (
    _HEAD
    + '''TRUE_W = {true_w!r}  # the data follow y = TRUE_W * x + NOISE * eps
NOISE = {noise!r}
KIND = {kind!r}  # "gaussian": x ~ N(0, 1); "ones": x = 1 as in the worked example
SEED = {seed!r}
LOSSES = {losses!r}  # "sum": sum((w*x - y)**2), the lesson's loss; "mean": that divided by B
{model_settings}

{row_normals}

def make_batches():
    """(x_batches, y_batches), shape (N, B), float32: drawn in float64, rounded once."""
    x = _row_normals(SEED, 0, N, B) if KIND == "gaussian" else np.ones((N, B))
{shift_x}    y = TRUE_W * x
{shift_y}    if NOISE:
        y = y + NOISE * _row_normals(SEED, 1, N, B)
    return x.astype(np.float32), y.astype(np.float32)

{train}'''
)

# The carry is the params pytree, {"w": w} for the lesson's model and {"w": w, "b": b} for the model
# with an intercept: one loop for both, every leaf updated with jax.tree.map.
_INTERCEPT_SETTINGS = """B0 = {b0!r}  # initial intercept: the carry is params = {{"w": W0, "b": B0}}
TRUE_B = {true_b!r}  # the data follow y = TRUE_W * x + TRUE_B + NOISE * eps
X_MEAN = {x_mean!r}  # x is centred here: far from 0, w and b pull on each other
"""
_TRAIN = '''
def loss_fn(params, x, y, scale):
    """The lesson's loss of the batch, sum((prediction - y)**2), times scale: 1 (sum) or 1/B (mean)."""
    return scale * jnp.sum(({prediction} - y) ** 2)


@jax.jit
def train(params, lr, x_batches, y_batches, scale):
    """The params after every step, each leaf (N,)."""

    def step(params, batch):
        x, y = batch
        grads = jax.grad(loss_fn)(params, x, y, scale)  # a dict like params
        new_params = jax.tree.map(lambda p, g: p - lr * g, params, grads)
        return new_params, new_params

    _, history = lax.scan(step, params, (x_batches, y_batches))
    return history


def finals(history):
    """Each param's final value, in PARAMS' order: "w = 1.5" or "w = 1.5, b = 0.25"."""
    return ", ".join(f"{{name}} = {{float(history[name][-1]):.9g}}" for name in PARAMS)


x_batches, y_batches = make_batches()
PARAMS = {params}
for loss in LOSSES:
    scale = np.float32(1.0 if loss == "sum" else 1.0 / B)
    history = train(PARAMS, np.float32(LR), x_batches, y_batches, scale)
    print(f"{{loss}} loss: final {{finals(history)}}")
'''

# The overlaid run, when the explorer shows one: the same loop with the carry grown up, the
# optimizer core's own make_optimizer (pasted from its source, as the schedules are).
_OPTAX = '''

# The run drawn dotted over plain SGD: an Optax optimizer, the learning rate per step from a schedule
OPTIMIZER = {optimizer!r}  # "sgd", "momentum" (heavy ball), "nesterov" or "adam"
MOMENTUM = {momentum!r}  # the momentum of "momentum" and "nesterov"
SCHEDULE = {schedule!r}  # how lr changes over the N steps
EXPONENTIAL_DECAY = {exponential_decay!r}
SCHEDULES = {schedules!r}
OPTIMIZERS = {optimizers!r}
MOMENTUM_OPTIMIZERS = {momentum_optimizers!r}


{schedule_function}

{check_optimizer}

{make_optimizer}

{with_standard_promotion}

@jax.jit
def train_optax(params, lrs, x_batches, y_batches, scale):
    """The params after every step; the carry is (params, the optimizer's state), and step k's
    learning rate lrs[k] is scanned with its batch."""

    def step(carry, inputs):
        params, state = carry
        x, y, lr = inputs
        grads = jax.grad(loss_fn)(params, x, y, scale)
        updates, state = make_optimizer(OPTIMIZER, lr, MOMENTUM).update(grads, state, params)
        new_params = optax.apply_updates(params, updates)
        return (new_params, state), new_params

    state = make_optimizer(OPTIMIZER, LR, MOMENTUM).init(params)
    _, history = lax.scan(step, (params, state), (x_batches, y_batches, lrs))
    return history


lrs = np.asarray(jax.vmap(schedule_function(SCHEDULE, LR, N))(jnp.arange(N)), dtype=np.float32)
for loss in LOSSES:
    scale = np.float32(1.0 if loss == "sum" else 1.0 / B)
    history = train_optax(PARAMS, lrs, x_batches, y_batches, scale)
    print(f"{run} ({{loss}} loss): final {{finals(history)}}")
'''

# Data of rows (the example data set, or the visitor's own CSV file): no generator, the rows
# themselves, cut into batches as core.batches_from_rows cuts them.
_ROWS_TEMPLATE = (
    _HEAD
    + '''SEED = {seed!r}  # which shuffle of the rows
STANDARDIZE = {standardize!r}  # x becomes (x - mean(x)) / std(x), over all rows, before the fit
REPLACE = {replace!r}  # whether the batches may use rows again when N * B exceeds them
LOSSES = {losses!r}  # "sum": sum((w*x - y)**2), the lesson's loss; "mean": that divided by B
{model_settings}
{data}


def make_batches():
    """(x_batches, y_batches), shape (N, B), float32: the rows shuffled with SEED and taken B to a
    batch, computed in float64 and rounded once."""
    x, y = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    if STANDARDIZE:
        x = (x - x.mean()) / x.std()
    rows = x.size
    if N * B > rows and not REPLACE:
        raise SystemExit(f"N * B = {{N * B}} rows are needed, the data have {{rows}}: lower N or B")
    rng = np.random.default_rng([SEED, 2])
    # A new shuffle for each pass over the rows: every row is used equally often, give or take one.
    passes = -(-N * B // rows)  # N * B / rows, rounded up
    order = np.concatenate([rng.permutation(rows) for _ in range(passes)])[: N * B]
    return x[order].reshape(N, B).astype(np.float32), y[order].reshape(N, B).astype(np.float32)

{train}'''
)

_ROWS_INTERCEPT_SETTINGS = """B0 = {b0!r}  # initial intercept: the carry is params = {{"w": W0, "b": B0}}
"""

_ENGEL = f"""# The data, the explorer's example: {core.EXAMPLE_TITLE}.
# Engel's 1857 household budgets, public domain: the source and licence are in ScanLab's
# core/datasets/README.md.
"""

_READ_CSV = """DATA_FILE = "{data_file}"
X, Y = np.loadtxt(DATA_FILE, delimiter=",", skiprows=1, unpack=True, encoding="utf-8")"""

EMBEDDED_ROWS = 5_000
"""The most rows a script holds as lists; more are read from DATA_FILENAME."""

DATA_FILENAME = "scanlab_data.csv"
"""The data of rows as the explorer's Export CSV offers them, and a script reads them when it
cannot hold them (widgets.export.data_csv)."""


def _float_list(values) -> str:
    """`values` as a Python list of floats, every value as repr writes it (it reads back exactly)."""
    items = ", ".join(repr(float(value)) for value in values)
    lines = textwrap.fill(items, 96, initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False)
    return f"[\n{lines},\n]"


def _rows_data(settings: Settings, table: core.Table) -> tuple[str, str]:
    """The script's lines that give X and Y, the table's x and y in the file's order, and the note
    for its docstring: the rows themselves up to EMBEDDED_ROWS, else DATA_FILENAME read."""
    rows = table.x.size
    # The names are a visitor's: ascii() keeps them on their comment line, in ASCII.
    names = f"x is {ascii(table.x_name)} and y is {ascii(table.y_name)}"
    if settings.kind == "engel":
        about = _ENGEL + f"# In the file's order: {names}, each in thousands of Belgian francs.\n"
    else:
        about = f"# The data: your CSV file's {rows:,} rows, in its order: {names}.\n"
    if rows <= EMBEDDED_ROWS:
        return about + f"X = {_float_list(table.x)}\nY = {_float_list(table.y)}", ""
    about += (
        "# Too many rows to write here: they are read from DATA_FILE, which the explorer's Export CSV\n"
        "# offers beside the run's numbers. Put it in the folder this script runs from. Its first row\n"
        "# names the columns, x then y; then one row per example.\n"
    )
    note = f"Reads its data from {DATA_FILENAME} (the explorer's Export CSV), in the folder it runs from.\n"
    return about + _READ_CSV.format(data_file=DATA_FILENAME), note


FILENAME = "scanlab_run.py"


def training_script(settings: Settings, link: str = "", *, table: core.Table | None = None) -> str:
    """The script for `settings`; `link` (the share link) is quoted in its docstring if given.

    Under data of rows (`of_rows(settings)`), `table` is their `core.Table` (`Rows.table`), which
    the script holds (or, beyond EMBEDDED_ROWS, reads from DATA_FILENAME) and cuts into batches as
    `core.batches_from_rows` does; `settings` must fit its rows (`Rows.fit`). Generated data ignore it.
    """
    losses = ("sum", "mean") if settings.loss == "both" else (settings.loss,)
    # A link is a visitor's URL: keep it to ASCII that cannot end the docstring or escape from it.
    safe_link = "".join(c for c in link if c.isascii() and c.isprintable() and c not in '"\\')[:500]
    grown = overlaid(settings)
    start = params(settings)
    intercept = "b" in start
    values = settings._asdict()
    common = {
        "link": f"\nShare link: {safe_link}" if safe_link else "",
        "needs": "jax, numpy and optax" if grown else "jax and numpy",
        "optax_import": "import optax\n" if grown else "",
        "filename": FILENAME,
        "losses": losses,
        "train": _TRAIN.format(
            # The model over its leaves: each leaf times its feature (x, or the constant 1).
            prediction=" + ".join(
                f'params["{leaf}"] * x' if FEATURES[leaf] == "x" else f'params["{leaf}"]' for leaf in start
            ),
            params="{" + ", ".join(f'"{leaf}": np.float32({leaf.upper()}0)' for leaf in start) + "}",
        ),
        **{name: value for name, value in values.items() if name != "loss"},
    }
    if of_rows(settings):
        if table is None:
            raise ValueError(f"kind {settings.kind!r} is data of rows: training_script needs their table")
        rows_data, note = _rows_data(settings, table)
        script = _ROWS_TEMPLATE.format(
            data_note=note,
            model_settings=_ROWS_INTERCEPT_SETTINGS.format(**values) if intercept else "",
            data=rows_data,
            **common,
        )
    else:
        script = _TEMPLATE.format(
            data_note="",
            row_normals=inspect.getsource(data._row_normals),
            model_settings=_INTERCEPT_SETTINGS.format(**values) if intercept else "",
            shift_x="    x = x + X_MEAN\n" if reads(settings, "x_mean") and settings.x_mean else "",
            shift_y="    y = y + TRUE_B\n" if reads(settings, "true_b") and settings.true_b else "",
            **common,
        )
    if not grown:
        return script
    return script + _OPTAX.format(
        optimizer=settings.optimizer,
        momentum=settings.momentum,
        schedule=settings.schedule,
        exponential_decay=optimizers.EXPONENTIAL_DECAY,
        schedules=optimizers.SCHEDULES,
        optimizers=optimizers.OPTIMIZERS,
        momentum_optimizers=optimizers.MOMENTUM_OPTIMIZERS,
        schedule_function=inspect.getsource(optimizers.schedule_function),
        check_optimizer=inspect.getsource(optimizers.check_optimizer),
        make_optimizer=inspect.getsource(optimizers.make_optimizer),
        with_standard_promotion=inspect.getsource(optimizers.with_standard_promotion),
        run=run_name(settings),
    )
