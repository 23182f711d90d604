"""The explorer's controls, and controls a visitor cannot break over the widget protocol.

`controls()` makes one widget per `Settings` field, bounded by `RANGES`; `preset_buttons()` one
button per preset.

A visitor's browser can send any widget any state (a `comm_msg` update), not only what the page's
controls produce. The explorer validates every value it reads (`widgets.settings.sanitize`); these
keep the widgets themselves consistent: bounds and options put back (`pin`), and bad states refused
with a TraitError, which makes traitlets undo the whole message.
"""

from __future__ import annotations

import contextlib
import math
from itertools import chain

import ipywidgets as ipw
from traitlets import TraitError, validate

from widgets.settings import (
    CHOICES,
    DEFAULTS,
    FLAGS,
    GENERATED_FIELDS,
    LEAF_FIELDS,
    PRESETS,
    RANGES,
    Settings,
    momentum_used,
    of_rows,
    reads,
)

PINNED = ("min", "max", "base", "step", "options", "_options_labels")
"""Traits a visitor could change that must stay as the kernel set them."""


def pin(widget, fixed: dict | None = None) -> None:
    """Put any of `fixed`'s traits back when a visitor changes them (default: every PINNED trait the
    widget has, as it is now). `fixed` is read at each change, so the kernel may update it (the
    playback range follows N). `set_trait` also restores read-only traits (`_options_labels`)."""
    if fixed is None:
        fixed = {name: getattr(widget, name) for name in PINNED if widget.has_trait(name)}
    if not fixed:
        return  # nothing to pin (a checkbox); traitlets reads names=[] as every trait

    def restore(change):
        if change["new"] != fixed[change["name"]]:
            change["owner"].set_trait(change["name"], fixed[change["name"]])

    widget.observe(restore, names=list(fixed))


@contextlib.contextmanager
def _refused(name: str):
    """Turn an arithmetic failure in a bounds check into the TraitError that refuses the value."""
    try:
        yield
    except (ArithmeticError, TypeError) as error:
        raise TraitError(f"{name}: {error}") from error


class LogSlider(ipw.FloatLogSlider):
    """FloatLogSlider whose bounds checks cannot fail with anything but a TraitError.

    ipywidgets checks value against base ** min and base ** max. A visitor's single update setting the
    exponent max to 5000 and the value overflowed there, in traitlets' final cross-validation, which
    undoes a message only on a TraitError: max stayed 5000, `pin` putting it back overflowed too, and
    every later lr was refused. As a TraitError the whole message is undone and the slider stays live.
    """

    @validate("value")
    def _validate_value(self, proposal):
        with _refused("value"):
            return super()._validate_value(proposal)

    @validate("min")
    def _validate_min(self, proposal):
        with _refused("min"):
            return super()._validate_min(proposal)

    @validate("max")
    def _validate_max(self, proposal):
        with _refused("max"):
            return super()._validate_max(proposal)


class _WholeIndex:
    """A selection whose index must be a whole number that names one of its real options.

    ipywidgets checks an index against `_options_labels`, which a visitor can resend, and traitlets
    takes a JSON `true` as 1; either way the widget reported a selection that does not exist."""

    @validate("index")
    def _validate_index(self, proposal):
        index = proposal.value
        options = self._options_full or ()
        if index is None or (type(index) is int and 0 <= index < len(options)):
            return index
        raise TraitError(f"index must name one of the {len(options)} options, got {index!r}")


class Choice(_WholeIndex, ipw.ToggleButtons):
    """ToggleButtons with a checked index (`_WholeIndex`)."""


class Menu(_WholeIndex, ipw.Dropdown):
    """Dropdown with a checked index (`_WholeIndex`)."""


def labelled(widget, tooltip: str, width: str = "4em", button_width: str = "6.5em"):
    """`widget` with its tooltip, its label `width` wide, its buttons (ToggleButtons)
    `button_width` wide, and a slider stretched to its column; returns `widget`."""
    widget.tooltip = tooltip
    widget.style = {"description_width": width}
    if isinstance(widget, ipw.ToggleButtons):
        widget.style.button_width = button_width
    elif isinstance(widget, (ipw.FloatLogSlider, ipw.FloatSlider, ipw.IntSlider)):
        widget.layout.width = "100%"
    return widget


def _slider(name: str, step: float, description: str | None = None) -> ipw.FloatSlider:
    """A FloatSlider over RANGES[name] at the default, labelled `description` (default: the name)."""
    low, high = RANGES[name]
    value = getattr(DEFAULTS, name)
    return ipw.FloatSlider(value=value, min=low, max=high, step=step, description=description or name)


KIND_LABELS = [("gaussian", "gaussian"), ("ones", "ones"), ("Engel 1857", "engel"), ("your CSV", "own")]
"""The data menu's labels, by kind (widgets.settings.CHOICES)."""
assert [kind for _, kind in KIND_LABELS] == list(CHOICES["kind"])


def _checkbox(name: str, tooltip: str) -> ipw.Checkbox:
    """A checkbox labelled with the setting's name, at its default, its label after the box."""
    return ipw.Checkbox(value=getattr(DEFAULTS, name), description=name, tooltip=tooltip, indent=False)


LONG_LABEL = "6em"
"""A label width for the longest names: "optimizer", "momentum", "schedule" in full."""


def controls() -> dict:
    """One widget per Settings field, named as the field, each labelled in the lesson's names, at
    DEFAULTS. Bounds come from RANGES, the single source that `sanitize` also enforces."""
    (lr_low, lr_high), (w0_low, w0_high) = RANGES["lr"], RANGES["w0"]
    (true_low, true_high), (noise_low, noise_high) = RANGES["true_w"], RANGES["noise"]
    return {
        "lr": labelled(
            # No step: a stepped log slider would snap 0.25 to 10**-0.6 = 0.2512 and break the
            # two-cycle preset and shared links; exact values are typed into the readout.
            LogSlider(
                value=DEFAULTS.lr,
                base=10,
                min=math.log10(lr_low),
                max=math.log10(lr_high),
                step=None,
                description="lr",
                readout_format=".4g",
            ),
            f"learning rate, {lr_low:g} to {lr_high:g} (log scale)",
        ),
        "N": labelled(
            ipw.IntSlider(value=DEFAULTS.N, min=RANGES["N"][0], max=RANGES["N"][1], description="N"),
            "steps: batches",
        ),
        "B": labelled(
            ipw.IntSlider(value=DEFAULTS.B, min=RANGES["B"][0], max=RANGES["B"][1], description="B"),
            "batch size",
        ),
        "loss": labelled(
            Choice(options=list(CHOICES["loss"]), value=DEFAULTS.loss, description="loss"),
            "sum((w*x - y)**2) as in the worked example, its mean over the batch, or both overlaid",
        ),
        "w0": labelled(
            ipw.FloatSlider(value=DEFAULTS.w0, min=w0_low, max=w0_high, step=0.1, description="w0"),
            "initial weight",
        ),
        "true_w": labelled(
            ipw.FloatSlider(
                value=DEFAULTS.true_w, min=true_low, max=true_high, step=0.1, description="true w"
            ),
            "the slope the data follow: y = true_w * x + noise",
        ),
        "noise": labelled(
            ipw.FloatSlider(
                value=DEFAULTS.noise, min=noise_low, max=noise_high, step=0.05, description="noise"
            ),
            "standard deviation of the noise added to y",
        ),
        "kind": labelled(
            Menu(options=KIND_LABELS, value=DEFAULTS.kind, description="data"),
            "x from a standard normal, all ones as in the worked example, Engel's households (income "
            "and food spending), or your own CSV file",
        ),
        "standardize": _checkbox("standardize", "x as (x - mean) / std: one lr then suits w and b"),
        "replace": _checkbox("replace", "use rows again when N x B is more than the rows"),
        "seed": labelled(
            ipw.BoundedIntText(
                value=DEFAULTS.seed,
                min=RANGES["seed"][0],
                max=RANGES["seed"][1],
                description="seed",
                layout={"width": "12em"},
            ),
            "data seed",
        ),
        "optimizer": labelled(
            Menu(options=list(CHOICES["optimizer"]), value=DEFAULTS.optimizer, description="optimizer"),
            "Optax's optimizer whose run is drawn over plain SGD's: its state rides in the carry",
            LONG_LABEL,
        ),
        "momentum": labelled(
            ipw.FloatSlider(
                value=DEFAULTS.momentum,
                min=RANGES["momentum"][0],
                max=RANGES["momentum"][1],
                step=0.01,
                description="momentum",
            ),
            "the momentum of the momentum and nesterov optimizers",
            LONG_LABEL,
        ),
        "schedule": labelled(
            Menu(options=list(CHOICES["schedule"]), value=DEFAULTS.schedule, description="schedule"),
            "how the learning rate changes over the N steps; the schedule is scanned with the batches",
            LONG_LABEL,
        ),
        "model": labelled(
            Choice(options=[("w", "w"), ("w, b", "w,b")], value=DEFAULTS.model, description="model"),
            "the carry: the weight w of y = w*x as in the worked example, or the parameter pytree "
            '{"w": w, "b": b} of y = w*x + b',
        ),
        "b0": labelled(_slider("b0", 0.1), "initial intercept b (the w, b model)"),
        "true_b": labelled(
            _slider("true_b", 0.1, "true b"), "the intercept the data follow: y = true_w * x + true_b + noise"
        ),
        "x_mean": labelled(
            _slider("x_mean", 0.1, "x mean"),
            "where x is centred: far from 0, w and b pull on each other and the loss's valley is long "
            "and narrow",
        ),
        "map": labelled(
            Choice(
                options=[("lr × B", "B"), ("lr × momentum", "momentum")],
                value=DEFAULTS.map,
                description="map",
            ),
            "the stability map's rows: batch sizes, or momenta at the current B (heavy-ball momentum)",
            button_width="11em",  # "lr × momentum" in full, in the projector's larger text too
        ),
    }


def show_used(inputs: dict, settings: Settings, hide, momentum_note, flag_notes: dict) -> None:
    """Show the controls `settings` read, the rest hidden (and those in `hide`): momentum is
    disabled, with its reason (`momentum_note`) under it, while it changes nothing on the page; the
    controls of the model's leaves, generated data's, or data of rows' flags with their notes."""
    used = momentum_used(settings)
    inputs["momentum"].disabled = not used
    momentum_note.layout.display = None if not used and "momentum" not in hide else "none"
    rows = of_rows(settings)
    for name in {*chain(*LEAF_FIELDS.values()), *GENERATED_FIELDS, *FLAGS}:
        shown = (
            name not in hide
            and reads(settings, name)
            and not (name in GENERATED_FIELDS and rows)
            and not (name in FLAGS and not rows)
        )
        inputs[name].layout.display = None if shown else "none"
        if name in flag_notes:
            flag_notes[name].layout.display = None if shown else "none"


def preset_buttons() -> dict:
    """A button per preset, by its key in PRESETS, labelled with its name."""
    return {
        key: ipw.Button(description=label, tooltip=f"preset: {label}", layout={"width": "auto"})
        for key, (label, _) in PRESETS.items()
    }


def defaults_button() -> ipw.Button:
    """ "Defaults", beside the presets: every control back to DEFAULTS ("Reset" only rewinds the steps)."""
    return ipw.Button(
        description="Defaults",
        tooltip="every control back to its default",
        icon="home",
        layout={"width": "auto"},
    )


def standardize_button() -> ipw.Button:
    """ "Standardize x", under the status while a run of data of rows diverges and standardising x
    would let this lr converge: one click ticks "standardize"."""
    return ipw.Button(
        description="Standardize x",
        tooltip="tick “standardize”: x rescaled to mean 0 and spread 1",
        layout={"width": "auto", "display": "none"},
    )


MOMENTUM_UNUSED = (
    "momentum changes nothing here: only the momentum and nesterov optimizers (and the lr × momentum "
    "map) use it."
)
"""Why the momentum slider is disabled (widgets.settings.momentum_used is False), under it."""


def momentum_note() -> ipw.HTML:
    """The line under the momentum slider saying why it is disabled, hidden while it is not."""
    note = ipw.HTML(MOMENTUM_UNUSED, layout={"display": "none"})
    note.add_class("scanlab-note")
    return note


__all__ = [
    "LONG_LABEL",
    "MOMENTUM_UNUSED",
    "PINNED",
    "Choice",
    "LogSlider",
    "Menu",
    "controls",
    "defaults_button",
    "labelled",
    "momentum_note",
    "pin",
    "preset_buttons",
]
