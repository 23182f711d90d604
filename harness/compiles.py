"""XLA compiles counted through jax.monitoring: the tests assert exact counts (none after warm-up),
the benchmarks report the compiles' number and seconds.

    with counting() as compiles:
        engine.warm_up()
    len(compiles), sum(compiles)  # compiles while the block ran, and their seconds
"""

import contextlib

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@contextlib.contextmanager
def counting():
    """A list that holds the duration in seconds of every XLA backend compile, in any thread, while
    the block runs (the listener is removed at its end)."""
    from jax import monitoring

    compiles: list[float] = []

    def listener(event, duration, **kwargs):
        if event == BACKEND_COMPILE:
            compiles.append(duration)

    monitoring.register_event_duration_secs_listener(listener)
    try:
        yield compiles
    finally:
        monitoring.unregister_event_duration_listener(listener)
