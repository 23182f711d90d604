"""The explorer's state: one `Settings` value, its ranges, presets, and the URL form of it: the
query a page's address carries (`from_query`, `presentation_from_query`, read from the request
Voila hands the kernel by `page_request`) and the share link's (`to_query`).

Every value that reaches the kernel (a URL, or a widget message from any visitor) goes through
`sanitize`, which clamps or replaces it and says why in plain words.
"""

from __future__ import annotations

import math
from typing import NamedTuple
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from core import OPTIMIZERS, SCHEDULES
from core.optimizers import MOMENTUM_OPTIMIZERS


class Settings(NamedTuple):
    """One run of the explorer, in the lesson's names."""

    lr: float = 0.01
    N: int = 100
    B: int = 16
    loss: str = "sum"  # which loss the charts show: "sum", "mean" or "both"
    w0: float = 0.0
    true_w: float = 2.0
    noise: float = 0.5
    kind: str = "gaussian"
    seed: int = 0
    # The carry grown up: an Optax optimizer's run overlaid on plain SGD's, and a learning-rate
    # schedule over the N steps ("constant" with "sgd": plain SGD alone, nothing overlaid).
    optimizer: str = "sgd"
    momentum: float = 0.9
    schedule: str = "constant"
    # The stability map's rows: its batch sizes (lr x B), or momenta at the current B (lr x momentum).
    map: str = "B"
    # The carry: the lesson's weight w (y = w*x), or the parameter pytree {"w": w, "b": b}
    # (y = w*x + b). The three below are that model's: its b's start, the intercept the data follow,
    # and where x is centred (0 decouples w and b; far from 0 the valley of the loss is long and
    # narrow). Under "w" they change nothing (`data_key`), and the data are the lesson's.
    model: str = "w"
    b0: float = 0.0
    true_b: float = 0.0
    x_mean: float = 0.0
    # Data of rows (kind "engel", the example data set, or "own", a visitor's CSV): x standardised
    # or not, and whether N x B over the rows uses rows again (else N is lowered to fit).
    standardize: bool = False
    replace: bool = False


DEFAULTS = Settings()

# (low, high) for numbers; the tuple of choices for the rest.
RANGES = {
    "lr": (1e-4, 10.0),
    "N": (1, 1000),
    "B": (1, 512),
    "w0": (-10.0, 10.0),
    "true_w": (-5.0, 5.0),
    "noise": (0.0, 2.0),
    "seed": (0, 9999),
    "momentum": (0.0, 0.99),
    "b0": (-10.0, 10.0),
    "true_b": (-5.0, 5.0),
    "x_mean": (-5.0, 5.0),
}
CHOICES = {
    "loss": ("sum", "mean", "both"),
    "kind": ("gaussian", "ones", "engel", "own"),
    "optimizer": OPTIMIZERS,
    "schedule": SCHEDULES,
    "map": ("B", "momentum"),
    "model": ("w", "w,b"),
}
INTEGERS = ("N", "B", "seed")
FLAGS = ("standardize", "replace")
"""The on/off settings: a checkbox each, "true" or "false" in a link."""

ROW_KINDS = ("engel", "own")
"""The kinds of data that are rows of a table, cut into batches (`core.batches_from_rows`): the
example data set and a visitor's own CSV file. The generated kinds draw x and y instead."""

GENERATED_FIELDS = ("true_w", "noise", "true_b", "x_mean")
"""The controls that shape generated data, which data of rows do not read (hidden for them)."""


LEAF_FIELDS = {"b": ("b0", "true_b", "x_mean")}
"""The controls a leaf of the model brings, shown and read only while the model has that leaf: the
intercept's start, and the generated data's intercept and mean of x, which give it something to fit."""


def leaves(settings: Settings) -> tuple[str, ...]:
    """The model's leaves, in `core.model.FEATURES`' order: ("w",) for y = w*x, ("w", "b") for
    y = w*x + b. The run's carry is the params pytree over them."""
    return tuple(settings.model.split(","))


def reads(settings: Settings, name: str) -> bool:
    """Whether the model of `settings` reads the field `name`: not a field of a leaf it lacks."""
    return all(name not in fields or leaf in leaves(settings) for leaf, fields in LEAF_FIELDS.items())


def of_rows(settings: Settings) -> bool:
    """Whether the data are rows of a table (`ROW_KINDS`) rather than generated."""
    return settings.kind in ROW_KINDS


def momentum_used(settings: Settings) -> bool:
    """Whether `momentum` changes anything the page shows: the run of an optimizer that reads it, or
    the lr × momentum map, whose box it moves. Under sgd or adam with the lr × B map it does not."""
    return settings.optimizer in MOMENTUM_OPTIMIZERS or settings.map == "momentum"


PRESETS = {
    "worked-example": (
        "Worked example",
        Settings(lr=0.1, N=2, B=2, loss="sum", w0=0.0, true_w=1.0, noise=0.0, kind="ones"),
    ),
    "smooth": (
        "Smooth convergence",
        Settings(lr=0.01, N=60, B=16, loss="sum", w0=-1.0, true_w=2.0, noise=0.0, kind="gaussian", seed=1),
    ),
    "oscillating": (
        "Oscillating",
        Settings(lr=0.2, N=30, B=4, loss="sum", w0=0.0, true_w=1.0, noise=0.0, kind="ones"),
    ),
    "two-cycle": (
        "Two-cycle",
        Settings(lr=0.25, N=30, B=4, loss="sum", w0=0.0, true_w=1.0, noise=0.0, kind="ones"),
    ),
    "diverging": (
        "Diverging",
        Settings(lr=0.1, N=60, B=16, loss="sum", w0=0.0, true_w=2.0, noise=0.3, kind="gaussian", seed=2),
    ),
    # A constant lr of 0.28 > 1/S = 0.25 oscillates outwards (|w - w*| grows to 25 in 15 steps);
    # decaying it exponentially over the run brings the same start to w* (the dotted overlay).
    "schedule-rescue": (
        "Schedule rescues a large lr",
        Settings(
            lr=0.28, N=15, B=4, loss="sum", w0=0.0, true_w=1.0, noise=0.0, kind="ones", schedule="exponential"
        ),
    ),
    # x centred at 3 makes the valley of the loss over (w, b) long and narrow (its walls 107 times
    # steeper than its floor), and the start is far along the floor. SGD's lr, 0.98 of its critical
    # lr, is set by the walls: it crosses the floor at 56 of its 60 steps, keeps 0.69 from it and
    # crawls along it (2.02 from (w*, b*) after 60 steps, from 5.9). Heavy-ball momentum 0.7
    # (dotted) adds up the steps along the floor: 0.11 from it after step 6, 0.044 from (w*, b*) at
    # the end. Chosen by measurement (docs/design.md, "The narrow valley"); tests/test_explorer.py
    # holds the paths to it.
    "narrow-valley": (
        "A narrow valley",
        Settings(
            lr=0.00575,
            N=60,
            B=16,
            loss="sum",
            w0=-1.0,
            true_w=2.0,
            noise=0.1,
            kind="gaussian",
            seed=0,
            optimizer="momentum",
            momentum=0.7,
            model="w,b",
            b0=6.0,
            true_b=1.0,
            x_mean=3.0,
        ),
    ),
    "sum-vs-mean": (
        "Sum vs mean at large B",
        Settings(lr=0.001, N=100, B=512, loss="both", w0=0.0, true_w=2.0, noise=0.5, kind="gaussian", seed=3),
    ),
}

_SHOWN = 40  # characters of a bad value quoted back in a notice


def _quote(value) -> str:
    """A value as the visitor gave it, shortened: strings quoted, numbers as numbers."""
    text = value if isinstance(value, str) else repr(value)
    text = text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
    return repr(text) if isinstance(value, str) else text


def _number(name: str, raw, notices: list[str]):
    """raw as a finite number in range, else the default or the nearest bound, with a notice."""
    default = getattr(DEFAULTS, name)
    low, high = RANGES[name]
    try:
        value = float(raw)
    except (TypeError, ValueError, OverflowError):
        notices.append(f"{name}={_quote(raw)} is not a number; using the default {default}.")
        return default
    if math.isnan(value):
        notices.append(f"{name}={_quote(raw)} is not a number; using the default {default}.")
        return default
    if name in INTEGERS and math.isfinite(value) and value != int(value):
        notices.append(f"{name}={_quote(raw)} is not a whole number; using {round(value)}.")
        value = float(round(value))
    if value < low or value > high:
        bound = low if value < low else high
        notices.append(f"{name}={_quote(raw)} is outside {low} to {high}; using {bound}.")
        value = bound
    # Six significant digits: a log slider hands back 10**log10(v), e.g. 0.24999999999999994 for 0.25,
    # and the presets' exact values (a two-cycle at exactly 1/S) must survive the round trip.
    return int(value) if name in INTEGERS else float(f"{value:.6g}")


def _choice(name: str, raw, notices: list[str]) -> str:
    if isinstance(raw, str) and raw in CHOICES[name]:
        return raw
    default = getattr(DEFAULTS, name)
    notices.append(f"{name}={_quote(raw)} is not one of {', '.join(CHOICES[name])}; using {default}.")
    return default


_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def _flag(name: str, raw, notices: list[str]) -> bool:
    if isinstance(raw, (bool, int)) and raw in (0, 1):  # a checkbox's value (True is 1)
        return bool(raw)
    if isinstance(raw, str) and raw.lower() in _TRUE + _FALSE:
        return raw.lower() in _TRUE
    default = getattr(DEFAULTS, name)
    notices.append(f"{name}={_quote(raw)} is not true or false; using {str(default).lower()}.")
    return default


def sanitize(values: dict) -> tuple[Settings, list[str]]:
    """Settings from loosely typed values (missing keys take defaults), and a notice per fix."""
    notices: list[str] = []
    fields = {}
    for name in Settings._fields:
        if name not in values:
            fields[name] = getattr(DEFAULTS, name)
        elif name in CHOICES:
            fields[name] = _choice(name, values[name], notices)
        elif name in FLAGS:
            fields[name] = _flag(name, values[name], notices)
        else:
            fields[name] = _number(name, values[name], notices)
    return Settings(**fields), notices


class Presentation(NamedTuple):
    """How the page looks, apart from the run: `view` ("default", or "projector": larger fonts and
    lines for a projector) and `hide`, the controls not shown (a teacher's focused link)."""

    view: str = "default"
    hide: tuple = ()


DEFAULT_PRESENTATION = Presentation()
VIEWS = ("default", "projector")
HIDEABLE = (*Settings._fields, "presets", "playback", "share", "code")
"""What `?hide=` may name: any control, the presets row, the playback row, the share and script row,
and "code": every "Code:" part, under the charts and in the hood's panels (the source of the
loops, which during the exercise is its answer)."""
_PRESENTATION_KEYS = ("view", "hide")


def _parse(query: str):
    """{key: [values]} of a query string, or None when it has too many parameters."""
    try:
        return parse_qs(query or "", keep_blank_values=True, max_num_fields=100)
    except ValueError:
        return None


def presentation_from_query(query: str) -> tuple[Presentation, list[str]]:
    """The page's `Presentation` from `view=projector&hide=seed,noise`, with a notice per value it
    could not use (`from_query` reads the run's settings from the same string)."""
    params = _parse(query)
    if params is None:
        return Presentation(), []  # from_query says so
    notices = []
    view = "default"
    if "view" in params:
        raw = params["view"][-1]
        if len(params["view"]) > 1:
            notices.append(f"'view' was given {len(params['view'])} times; using the last, {_quote(raw)}.")
        if raw in VIEWS:
            view = raw
        else:
            notices.append(f"view={_quote(raw)} is not one of {', '.join(VIEWS)}; using default.")
    hidden: list[str] = []
    for raw in params.get("hide", []):  # repeated hide= parameters add up
        for name in raw.split(","):
            if name in HIDEABLE:
                if name not in hidden:
                    hidden.append(name)
            elif name:
                notices.append(f"hide={_quote(name)} is not one of {', '.join(HIDEABLE)}; ignored.")
    return Presentation(view, tuple(name for name in HIDEABLE if name in hidden)), notices[:10]


OWN_DATA_LINK = (
    "This link was made with the visitor's own data, which a link cannot carry; this page uses the "
    f"default data ({DEFAULTS.kind}). Upload the same CSV file to see their run."
)
"""The notice of a link whose data were the visitor's own (kind=own)."""


def from_query(query: str) -> tuple[Settings, list[str]]:
    """Settings from a URL query string such as `lr=0.1&N=50&preset=diverging`.

    A preset is applied first and the other parameters override it; unknown parameters are
    ignored with a notice. Nothing here is trusted: every value goes through `sanitize`.
    """
    notices: list[str] = []
    params = _parse(query)
    if params is None:
        return DEFAULTS, ["The link has too many parameters; using the defaults."]
    values: dict = {}
    for key, raw_values in params.items():
        if key in _PRESENTATION_KEYS:
            continue  # presentation_from_query's
        raw = raw_values[-1]
        if len(raw_values) > 1:
            notices.append(f"{_quote(key)} was given {len(raw_values)} times; using the last, {_quote(raw)}.")
        if key == "preset":
            if raw in PRESETS:
                values = {**PRESETS[raw][1]._asdict(), **values}
            else:
                notices.append(f"preset={_quote(raw)} is not one of {', '.join(PRESETS)}; ignored.")
        elif key in Settings._fields:
            values[key] = raw
        else:
            notices.append(f"Unknown parameter {_quote(key)} ignored.")
    settings, problems = sanitize(values)
    if settings.kind == "own":
        settings = settings._replace(kind=DEFAULTS.kind)
        problems.append(OWN_DATA_LINK)
    return settings, notices + problems


def to_query(settings: Settings, presentation: Presentation = DEFAULT_PRESENTATION) -> str:
    """The query string that reproduces `settings` (lr, N, B and loss always, the rest if not
    default) and `presentation` (when not the default)."""
    always = ("lr", "N", "B", "loss")
    pairs = [
        (
            name,
            str(value).lower()
            if isinstance(value, bool)
            else f"{value:.6g}"
            if isinstance(value, float)
            else value,
        )
        for name, value in settings._asdict().items()
        if name in always or value != getattr(DEFAULTS, name)
    ]
    if presentation.view != "default":
        pairs.append(("view", presentation.view))
    if presentation.hide:
        pairs.append(("hide", ",".join(presentation.hide)))
    return urlencode(pairs, safe=",")


def page_url(environ) -> str:
    """The address of the page this kernel serves, "" outside Voila.

    Host, port, path and query come from the request details Voila hands the kernel (SERVER_NAME,
    SERVER_PORT, SCRIPT_NAME, QUERY_STRING). Not VOILA_REQUEST_URL: Voila gives each new request's URL
    to the kernel that refills the pool, so a preheated kernel holds the previous visitor's address
    (none at all for the first visitor after a start). Only its scheme is used, since it is the same
    server's; http when there is none.
    """
    host = environ.get("SERVER_NAME", "")
    if not host:
        return environ.get("VOILA_REQUEST_URL", "")
    scheme = urlsplit(environ.get("VOILA_REQUEST_URL", "")).scheme
    port = environ.get("SERVER_PORT", "")
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    path = environ.get("SCRIPT_NAME", "") or "/"
    return urlunsplit(
        (scheme if scheme in ("http", "https") else "http", netloc, path, environ.get("QUERY_STRING", ""), "")
    )


class PageRequest(NamedTuple):
    """What the page's address asks for: its run, its look, a notice per value that could not be
    used, the address without its query (the share link's start; "" outside Voila), and whether a
    server sent the page over http(s) (else JupyterLab shows the notebook)."""

    settings: Settings
    presentation: Presentation
    notices: list
    base_url: str
    served: bool


def page_request(environ) -> PageRequest:
    """The `PageRequest` of the request Voila handed the kernel in `environ` (os.environ: its
    QUERY_STRING and request details, `page_url`)."""
    query = environ.get("QUERY_STRING", "")
    settings, notices = from_query(query)
    presentation, more = presentation_from_query(query)
    url = page_url(environ)
    base = urlunsplit(urlsplit(url)._replace(query="", fragment="")) if url else ""
    served = urlsplit(url).scheme in ("http", "https")
    return PageRequest(settings, presentation, notices + more, base, served)
