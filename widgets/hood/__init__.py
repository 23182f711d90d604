"""Under the hood: the patterns around the scan, one panel each, beside the explorer.

- "invariants" (invariants.py): three ways to hand a scan body an input that does not change, their
  results, jaxprs and memory, and the rule for a closed-over learning rate;
- "loops" (loops.py): `lax.scan` under jit, a Python loop around a jitted step and the loop unrolled
  inside jit, compile and run time against N, measured live in a subprocess (measure.py runs it);
  and the cost of host syncs;
- "optax" (optax_panel.py): the pure train step on a parameter pytree, with an Optax optimizer;
- "lr" (lr.py): where a scan's learning rate lives, closed over, scanned or in the carry.

Each panel is built the first time its section is opened (`UnderTheHood.show`, section.py), so a
page that never opens one pays nothing for it. Callbacks read the controls and call `core`; each
panel shows the source of the core functions it runs, and declares its controls' ranges once
(`RANGES`, read by the widgets and by the clamp). What panels share is in common.py.
"""

from widgets.hood.common import HOOD_MARGIN
from widgets.hood.invariants import LR_DEMO, MEMORY_LENGTHS, InvariantsPanel
from widgets.hood.loops import RANGES_OF_N, LoopsPanel
from widgets.hood.lr import LrPanel
from widgets.hood.measure import MEASURING_SLOTS, SYNC_EVERY, SYNC_N, measurement_command, take_slot
from widgets.hood.optax_panel import BATCH_SIZES, MAX_STEPS, PARAMETERS, OptaxPanel
from widgets.hood.section import PANELS, UnderTheHood

__all__ = [
    "BATCH_SIZES",
    "HOOD_MARGIN",
    "LR_DEMO",
    "MAX_STEPS",
    "MEASURING_SLOTS",
    "MEMORY_LENGTHS",
    "PANELS",
    "PARAMETERS",
    "RANGES_OF_N",
    "SYNC_EVERY",
    "SYNC_N",
    "InvariantsPanel",
    "LoopsPanel",
    "LrPanel",
    "OptaxPanel",
    "UnderTheHood",
    "measurement_command",
    "take_slot",
]
