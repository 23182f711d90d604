"""Controls a visitor cannot break over the widget protocol.

A visitor's browser can send any widget any state (a `comm_msg` update), not only what the page's
controls produce. The explorer validates every value it reads (`widgets.settings.sanitize`); these
keep the widgets themselves consistent: bounds and options put back (`pin`), and bad states refused
with a TraitError, which makes traitlets undo the whole message.
"""

from __future__ import annotations

import contextlib

import ipywidgets as ipw
from traitlets import TraitError, validate

PINNED = ("min", "max", "base", "step", "options", "_options_labels")
"""Traits a visitor could change that must stay as the kernel set them."""


def pin(widget, fixed: dict | None = None) -> None:
    """Put any of `fixed`'s traits back when a visitor changes them (default: every PINNED trait the
    widget has, as it is now). `fixed` is read at each change, so the kernel may update it (the
    playback range follows N). `set_trait` also restores read-only traits (`_options_labels`)."""
    if fixed is None:
        fixed = {name: getattr(widget, name) for name in PINNED if widget.has_trait(name)}

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


__all__ = ["PINNED", "Choice", "LogSlider", "Menu", "pin"]
