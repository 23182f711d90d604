"""Page probes written as .js files, each one function expression, filled in one way: called with
its arguments as JSON.

    page.evaluate(call(HERE / "page_state.js"))
    context.add_init_script(call(HERE / "probe.js", {"expected": 6}))

The result is an expression, which page.evaluate and page.wait_for_function evaluate (and poll) and
add_init_script runs, so no probe is filled by string replacement."""

import functools
import json
from pathlib import Path


@functools.cache
def _source(path: Path) -> str:
    return path.read_text().strip().removesuffix(";")


def call(path: Path, *args) -> str:
    """`(<the function in path>)(<each argument as JSON>)`: a JavaScript expression."""
    # The newline: a file that ends in a // comment must not comment out the call.
    return f"({_source(path)}\n)({', '.join(json.dumps(a) for a in args)})"
