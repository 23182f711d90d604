"""The functions the Code parts show are declared by core (core.shown), and each still exists."""

import inspect

import pytest

import core
from core.shown import SHOWN, shown


@pytest.mark.parametrize("name", sorted(SHOWN))
def test_every_shown_function_is_a_function_of_core_that_exists(name):
    assert SHOWN[name], name
    for part, functions in SHOWN[name]:
        assert part in {"lesson", "pytree", "engine", "theory"}  # each has its title (widgets.code)
        assert functions
        for function in functions:
            function = inspect.unwrap(function)
            module = inspect.getmodule(function)
            assert module.__name__.startswith("core."), function
            # Reachable under its own name, and shown as its own source.
            assert inspect.unwrap(getattr(module, function.__name__)) is function
            assert f"def {function.__name__}(" in inspect.getsource(function)


def test_shown_gives_each_function_once_in_order():
    functions = shown("sum_vs_mean")
    assert len(functions) == len(set(functions))
    assert functions[0] is core.lesson.lesson_history
    assert functions[-1] is core.model.mean_of


def test_an_unknown_name_is_refused_by_name():
    with pytest.raises(ValueError, match="name must be one of"):
        shown("nope")
