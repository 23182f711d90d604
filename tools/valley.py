"""How the narrow-valley preset's two paths cross the valley's floor, over a grid of its settings:
the measurement its lr, momentum and noise were chosen by (widgets/settings.py, docs/design.md).

    JAX_PLATFORMS=cpu .venv/bin/python -m tools.valley

Each line: the setting, then for SGD and for the overlaid momentum run how many of the steps cross
the floor (the line through (w*, b*) along the valley), their mean distance from it after the first
tenth of the steps, and the distance from (w*, b*) at the end (core.contours.valley_path, as the
contour chart's caption says them). The preset wants SGD crossing at most steps, momentum keeping
less than half SGD's distance from the floor, and ending far closer.
"""

import itertools

from widgets.model import Model
from widgets.settings import PRESETS

SHARES = (0.9, 0.95, 0.98)  # lr as a share of SGD's critical lr
MOMENTA = (0.5, 0.6, 0.7, 0.8)
NOISES = (0.0, 0.1, 0.3)


def main() -> None:
    preset = PRESETS["narrow-valley"][1]
    model = Model()
    critical = model.compute(preset).critical_lr["sum"]  # x alone sets it: the same for every noise
    print(
        f"critical lr {critical:.6g}; the preset: lr {preset.lr}, momentum {preset.momentum}, "
        f"noise {preset.noise}"
    )
    print("noise  lr       share momentum | SGD: crosses settled end | momentum: crosses settled end")
    for noise, share, momentum in itertools.product(NOISES, SHARES, MOMENTA):
        settings = preset._replace(noise=noise, lr=round(share * critical, 5), momentum=momentum)
        sgd, heavy = model.compute(settings).valley_paths["sum"]
        print(
            f"{noise:4.1f}  {settings.lr:.5f} {share:4.2f}  {momentum:4.1f}     | "
            f"{sgd.crossings:3d}/{sgd.steps} {sgd.settled:6.3f} {sgd.end:6.3f} | "
            f"{heavy.crossings:3d}/{heavy.steps} {heavy.settled:6.3f} {heavy.end:6.3f}"
        )


if __name__ == "__main__":
    main()
