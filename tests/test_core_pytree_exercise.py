"""check_pytree_step against learners' pytree_training_step, right and wrong, and its designed cases.

The catalogue, PYTREE, is in harness/support/pytree_learners.py, each function written as a learner
would write it; each must get exactly its codes, and every failing finding must print the numbers
it compares. The float64 models are checked against the engine (core.pytree_history) and Optax, and
the cases against each other: every mistake gives numbers of its own.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import core
import harness.support.learner_corpus as corpus
from core.exercises import (
    EXERCISES,
    PYTREE_CHECKS,
    PYTREE_MISTAKES,
    WRONG_RESULT,
    check_pytree_step,
    pytree_step,
    reading,
)
from harness.support.carry_learners import assert_carry_report
from harness.support.pytree_learners import (
    PYTREE,
    loss,
    pytree_every_step,
    pytree_from_zeros,
    pytree_gradient_of_x,
    pytree_grads_first,
    pytree_in_turn,
    pytree_list_out,
    pytree_named_keys,
    pytree_right,
    pytree_updated_in_place,
    pytree_updates_not_applied,
)


@pytest.mark.parametrize("fn", list(PYTREE), ids=lambda fn: fn.__name__)
def test_each_pytree_step_gets_exactly_its_mistakes(fn):
    # The same three checks as the carry exercises', read by the same assertions.
    assert PYTREE_CHECKS == core.CARRY_CHECKS
    assert_carry_report(check_pytree_step(fn), PYTREE[fn], PYTREE_MISTAKES)


def test_the_messages_say_what_came_back_and_what_the_mistake_did():
    finding = check_pytree_step(pytree_list_out).findings[0]
    assert finding.code == "returns_tuple"
    assert "a list of two numbers (1.78601, 0.190674): the right w and b, but in a tuple" in finding.message
    assert "Expected the params dict, {'w': 1.78601, 'b': 0.190674}" in finding.message
    assert finding.expected == "{'w': 1.78601, 'b': 0.190674}"
    finding = check_pytree_step(corpus.pytree_returns_values).findings[0]
    assert "(0.190674, 1.78601): the right b and w, in that order" in finding.message
    finding = check_pytree_step(corpus.pytree_unpacks_the_dict).findings[0]
    assert finding.code == "error" and "at line" in finding.message
    assert "the keys 'w' and 'b' that w, b = params unpacks from a dict" in finding.message
    finding = check_pytree_step(pytree_in_turn).findings[0]
    assert "w updated first, then b's gradient taken at the new w" in finding.message
    assert "{'w': 1.89798, 'b': -0.0794566}" in finding.message
    finding = check_pytree_step(pytree_grads_first).findings[0]
    assert "g - lr * p for every leaf" in finding.message
    finding = check_pytree_step(pytree_every_step).findings[0]
    assert (
        "a dict of arrays of shape (3,)" in finding.message and "the params of every step" in finding.message
    )


# Not in the catalogue: numbers no mistake explains, so no code to name (the test below).
def pytree_keys_swapped(params, lr, x_batches, y_batches):
    final_params = pytree_right(params, lr, x_batches, y_batches)
    return {"w": final_params["b"], "b": final_params["w"]}


def pytree_w_alone(params, lr, x_batches, y_batches):
    return pytree_right(params, lr, x_batches, y_batches)["w"]


def test_numbers_no_mistake_explains_are_a_wrong_result():
    # The right values under each other's keys: a slip with no code, said in words.
    report = check_pytree_step(pytree_keys_swapped)
    finding = report.findings[0]
    assert not report.passed and report.mistakes == frozenset() and finding.code == WRONG_RESULT
    assert "the right values under each other's keys" in finding.message
    # Keys renamed: its own code (it was wrong_result with the tuple's hint), and the sentence
    # says whether the values under them are right.
    finding = check_pytree_step(pytree_named_keys).findings[0]
    assert finding.code == "keys_renamed" and "a dict with the keys 'weight', 'bias'" in finding.message
    assert "the right w and b, but under other keys. Expected the params dict with the keys it was given" in (
        finding.message
    )
    assert finding.hint.startswith('The exercise: "Return the final params as a dict with the same keys"')
    # One number where the dict was expected: said, with no code.
    report = check_pytree_step(pytree_w_alone)
    words = "your function returns one number, 1.78601; expected the params dict"
    assert report.mistakes == frozenset() and words in report.findings[0].message, report
    # The params returned unchanged, and a scan from w = b = 0: named (the catalogue's functions),
    # with the sentence that says what the numbers are.
    for fn, code, words in (
        (pytree_updates_not_applied, "params_unchanged", "the initial params: no step reached"),
        (pytree_from_zeros, "from_zeros", "what the steps started from w = 0 and b = 0 give"),
    ):
        finding = check_pytree_step(fn).findings[0]
        assert finding.code == code and words in finding.message, finding


def test_a_carry_of_another_tree_and_a_gradient_in_x_are_said_in_words():
    # params.update(...) returns None: the body's carry comes back as None. JAX's lines that end in
    # ":" go on in the next, so the two trees are read as JAX prints them.
    message = check_pytree_step(pytree_updated_in_place).findings[0].message
    assert (
        "the input tree structure is: PyTreeDef({'b': *, 'w': *}) the output tree structure is: " in message
    )
    assert "PyTreeDef(None). " in message and "params.update(...), which changes a dict in place" in message
    assert ":." not in message
    # The gradient in x (argnums=1): tree.map of the params dict and an array.
    message = check_pytree_step(pytree_gradient_of_x).findings[0].message
    assert "the gradient taken with respect to another argument" in message and ":." not in message


def test_the_worked_example_gives_the_lessons_numbers():
    worked = pytree_step.PYTREE_CASES[0]
    assert worked.outcomes()["correct"][0][0] == pytest.approx((0.48, 0.48))
    first_step = worked._replace(x=worked.x[:1], y=worked.y[:1])
    assert first_step.run("correct") == pytest.approx((0.4, 0.4))
    assert first_step.run("w first") == pytest.approx((0.4, 0.24))
    # Every x has a nonzero mean, so that w and b pull on each other.
    assert all(np.all(case.x.mean(axis=1) != 0) for case in pytree_step.PYTREE_CASES)


def _gap(a, b) -> float:
    return max(abs(u - v) / max(1, abs(u), abs(v)) for u, v in zip(a, b, strict=True))


def test_the_designed_cases_tell_every_pattern_apart():
    # On some case each pair of patterns' models is 4 % or more apart, and every model of a
    # mistake is 2 % or more off the right params on the distinct batches.
    outcomes = [case.outcomes() for case in pytree_step.PYTREE_CASES]
    patterns = list(outcomes[0])
    assert patterns == list(pytree_step._PATTERNS)
    for i, p in enumerate(patterns):
        for q in patterns[i + 1 :]:
            assert any(
                min(_gap(a, b) for a, _ in found[p] for b, _ in found[q]) > 0.04 for found in outcomes
            ), (
                p,
                q,
            )
    right = outcomes[1]["correct"][0][0]
    assert all(_gap(v, right) > 0.02 for p in patterns[1:] for v, _ in outcomes[1][p])
    # A learner making one mistake, in any of its models, is diagnosed as that mistake.
    for pattern in patterns[1:]:
        for k in range(len(outcomes[0][pattern])):  # each case has the same models, in one order
            learner = [found[pattern][k][0] for found in outcomes]
            assert reading.diagnose(outcomes, learner, patterns)[0] == pattern, (pattern, k)


def test_the_models_agree_with_the_engine_and_optax():
    with jax.enable_x64(True):
        for case in pytree_step.PYTREE_CASES:
            for loss_name, rule in (("sum", "correct"), ("mean", "mean")):
                history = core.pytree_history(
                    {"w": np.float64(case.w), "b": np.float64(case.b)},
                    case.lr,
                    case.x,
                    case.y,
                    loss=loss_name,
                )
                final = (float(history.params["w"][-1]), float(history.params["b"][-1]))
                assert final == pytest.approx(case.run(rule), rel=1e-12)
            optimizer = optax.sgd(case.lr)
            params = {"w": jnp.float64(case.w), "b": jnp.float64(case.b)}
            state = optimizer.init(params)
            for x, y in zip(case.x, case.y, strict=True):
                updates, state = optimizer.update(jax.grad(loss)(params, x, y), state)
                params = optax.apply_updates(params, updates)
            assert (float(params["w"]), float(params["b"])) == pytest.approx(case.run("correct"), rel=1e-12)


def test_read_params_says_what_came_back():
    w, b = jnp.float32(0.5), jnp.float32(-1.0)
    assert reading.read_params({"w": w, "b": b}, 3)[:2] == ("params", (0.5, -1.0))
    assert reading.read_params({"b": 2.0, "w": 1}, 3)[:2] == ("params", (1.0, 2.0))
    assert reading.read_params((w, b), 3)[:2] == ("tuple", (0.5, -1.0))
    assert reading.read_params([w, b], 3).shown == "a list of two numbers (0.5, -1)"
    history = reading.read_params({"w": jnp.arange(4.0), "b": jnp.ones(4)}, 3)
    assert history.kind == "history" and history.final == (3.0, 1.0) and len(history.values) == 4
    pair = reading.read_params(({"w": w, "b": b}, jnp.zeros((3, 2))), 3)
    assert pair.kind == "pair" and pair.final == (0.5, -1.0)
    for out, shown in (
        ({"w": w}, "a dict with the keys 'w'"),
        ({"w": jnp.ones(2), "b": b}, "a dict whose 'w' has shape (2,) and 'b' shape ()"),
        (None, "None (is its return statement missing?)"),
        ((w, b, w), "a tuple of 3 numbers [0.5, -1, 0.5]"),
    ):
        output = reading.read_params(out, 5)
        assert output.kind == "other" and output.final is None and output.shown == shown, output
    # Pairs match pairs entry by entry; a pair never matches a number.
    assert reading.close((0.5, -1.0), (0.50001, -1.0)) and not reading.close((0.5, -1.0), (0.5, -1.01))
    assert not reading.close(0.5, (0.5, -1.0)) and not reading.close((0.5, float("nan")), (0.5, 1.0))


def test_the_exercise_is_a_row_with_a_hint_for_every_code():
    row = EXERCISES["pytree_training_step"]
    assert row is pytree_step.PYTREE and row.mistakes == PYTREE_MISTAKES
    assert set(row.hints) == set(PYTREE_MISTAKES) | {"traced values", WRONG_RESULT}
    assert all(row.hints[code].startswith("The exercise") for code in PYTREE_MISTAKES)
    assert set(row.explanations) == set(pytree_step._PATTERNS) - {"correct"}


def test_bad_use_of_the_checker():
    with pytest.raises(TypeError, match=r"fn must be callable.*\(params, lr, x_batches, y_batches\)"):
        check_pytree_step({"w": 0.48, "b": 0.48})
    with pytest.raises(ValueError, match="timeout must be a finite positive number"):
        check_pytree_step(pytree_right, timeout=0)
