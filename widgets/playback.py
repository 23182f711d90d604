"""Playback: the scan shown step by step, with a Play button, a step slider, Step and Reset.

The widgets only; the explorer observes `play` and draws the step (each step changes the
current-step marker alone, a points-only frame in the browser).
"""

from __future__ import annotations

import ipywidgets as ipw

from widgets.controls import pin


class Playback:
    """The playback widgets over steps 0 to `n` (the weight after that many steps), at `n`.

    `play` and `slider` are linked in the page; both are pinned to `range` ({"min", "max"}), which
    `set_range` moves with N. `widgets` lists them in the order of the page's playback row."""

    def __init__(self, n: int):
        self.play = ipw.Play(value=n, min=0, max=n, interval=400, description="play", tooltip="play the scan")
        self.slider = ipw.IntSlider(value=n, min=0, max=n, description="step")
        ipw.jslink((self.play, "value"), (self.slider, "value"))
        self.step_button = ipw.Button(description="Step", tooltip="one step of the scan", icon="step-forward")
        self.reset_button = ipw.Button(description="Reset", tooltip="back to step 0", icon="undo")
        self.widgets = [self.play, self.step_button, self.reset_button, self.slider]
        self.range = {"min": 0, "max": n}
        pin(self.play, self.range)
        pin(self.slider, self.range)

    def clamp(self, step) -> int:
        """`step` (any number a visitor sent) as a whole step within the range."""
        return min(max(int(step), 0), self.range["max"])

    def move(self, step: int) -> None:
        """Stop playing and go to `step`, clamped to the range."""
        self.play.playing = False
        self.play.value = self.clamp(step)

    def set_range(self, n: int) -> None:
        """Steps 0 to `n`, stopped at `n` (a new N: the run's end). The caller keeps its own
        observers of `play` quiet meanwhile."""
        self.play.playing = False
        self.range["max"] = n
        self.play.max = self.slider.max = n
        # Both: the page's link between them moves the slider, but a page that connects later
        # (an explorer built ahead of its visitor) gets the slider's value from here.
        self.play.value = self.slider.value = n


__all__ = ["Playback"]
