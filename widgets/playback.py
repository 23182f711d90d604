"""Playback: the scan shown step by step, with a Play button, a step slider, Step and Reset, and how
long Play takes over the whole run ("play time").

The widgets only; the explorer observes `play` and draws the step (each step changes the
current-step marker alone, a points-only frame in the browser).
"""

from __future__ import annotations

import math

import ipywidgets as ipw

from widgets.batch import or_unbatched
from widgets.controls import Menu, pin

FRAME_MS = 100
"""The shortest time between two of Play's frames: each is a message to the kernel and a redraw of
every chart's marker, which a page does in about 90 ms (a slider to its repainted chart,
shared/NOTES.md); a faster Play would queue frames the page draws late."""

PLAY_TIMES = (("5 s", 5), ("10 s", 10), ("30 s", 30), ("1 min", 60))
"""The choices of "play time" (label, seconds): how long Play takes from step 0 to N, whatever N."""
PLAY_TIME = 10


def pace(n: int, seconds: float) -> tuple[int, int]:
    """(interval in ms, steps per frame) for ipywidgets.Play to cover steps 0 to `n` in `seconds`:
    one step a frame while frames are at least FRAME_MS apart, more steps a frame past that. Play
    stops at the last frame that does not pass `n` (Playback shows `n` then: `_finish`), so the
    interval spreads `seconds` over ceil(n / step) frames."""
    step = max(1, math.ceil(n * FRAME_MS / (seconds * 1000)))
    frames = max(1, math.ceil(n / step))
    return round(seconds * 1000 / frames), step


class Playback:
    """The playback widgets over steps 0 to `n` (the weight after that many steps), at `n`.

    `play` and `slider` are linked in the kernel: the page's Play moves `play` and the explorer,
    drawing that step, moves `slider` (`show`); a visitor's drag of `slider` moves `play` (inside
    `batch`: with the step's drawing, one message). Not in the page (ipywidgets.jslink): a page's
    link answers every move the kernel makes with a message of its own, which can reach the kernel
    after a later move and undo it (Reset then Defaults, clicked 0 to 30 ms apart, ended at step 0
    in 10 of 18 tries); here the page sends only what its visitor does. Both are pinned to `range`
    ({"min", "max"}), which `set_range` moves with N, and `play` to its `pace` ({"interval",
    "step"}), which follows N and `time` (the "play time" menu). `widgets` lists them in the order
    of the page's playback row."""

    def __init__(self, n: int, batch=None):
        self.time = Menu(options=PLAY_TIMES, value=PLAY_TIME, description="play time")
        self.time.tooltip = "how long Play takes from step 0 to N, whatever N"
        self.time.style = {"description_width": "5em"}
        self.time.layout.width = "11em"
        interval, step = pace(n, self.time.value)
        self.play = ipw.Play(
            value=n, min=0, max=n, interval=interval, step=step, description="play", tooltip="play the scan"
        )
        self.slider = ipw.IntSlider(value=n, min=0, max=n, description="step")
        self._batch = or_unbatched(batch)
        self.slider.observe(self._slid, names="value")
        self.step_button = ipw.Button(description="Step", tooltip="one step of the scan", icon="step-forward")
        self.reset_button = ipw.Button(description="Reset", tooltip="back to step 0", icon="undo")
        self.widgets = [self.play, self.step_button, self.reset_button, self.time, self.slider]
        self.range = {"min": 0, "max": n}
        self.pace = {"interval": interval, "step": step}
        self._moving = False  # the kernel stops Play itself (`move`): not the end of the run
        pin(self.play, self.range)
        pin(self.play, self.pace)
        pin(self.slider, self.range)
        pin(self.time)
        self.time.observe(lambda _: self._set_pace(), names="value")
        self.play.observe(self._finish, names="playing")

    def clamp(self, step) -> int:
        """`step` (any number a visitor sent) as a whole step within the range."""
        return min(max(int(step), 0), self.range["max"])

    def move(self, step: int) -> None:
        """Stop playing and go to `step`, clamped to the range."""
        self._moving = True
        try:
            self.play.playing = False
            self.play.value = self.clamp(step)
            self.show(self.play.value)
        finally:
            self._moving = False

    def show(self, step: int) -> None:
        """The slider at `step`, the step drawn."""
        self.slider.value = step

    def _slid(self, change) -> None:
        with self._batch:
            self.play.value = self.clamp(change["new"])

    def set_range(self, n: int) -> None:
        """Steps 0 to `n`, stopped at `n` (a new N: the run's end), Play paced for `n` steps. The
        caller keeps its own observers of `play` quiet meanwhile."""
        self._moving = True
        try:
            self.play.playing = False
        finally:
            self._moving = False
        # Never a value past a max, in the kernel or in the page, whose slider would clamp it and
        # send the clamped value back: the maxes first when they grow, the values first when not.
        grows = n >= self.range["max"]
        self.range["max"] = n  # first: `pin` puts back any other max
        if grows:
            self.play.max = self.slider.max = n
        self.play.value = self.slider.value = n
        if not grows:
            self.play.max = self.slider.max = n
        self._set_pace()

    def _set_pace(self) -> None:
        interval, step = pace(self.range["max"], self.time.value)
        self.pace.update(interval=interval, step=step)
        with self.play.hold_sync():
            self.play.interval, self.play.step = interval, step

    def _finish(self, change) -> None:
        """Play stopped by itself within a frame of the end (its next frame would pass N, which a
        step of several per frame does when it does not divide N): show the end, where the run is."""
        end, value = self.range["max"], self.play.value
        if not change["new"] and not self._moving and 0 < end - value < self.pace["step"]:
            self.play.value = end


__all__ = ["FRAME_MS", "PLAY_TIME", "PLAY_TIMES", "Playback", "pace"]
