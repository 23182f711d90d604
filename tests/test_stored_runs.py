"""core's numbers stay what they were: the stored runs of both models, bit for bit
(tools/stored_runs.py says what they hold and how to rewrite them after a deliberate change)."""

import numpy as np

from tools.stored_runs import STORED, runs, same_bits


def test_every_stored_run_is_computed_again_bit_for_bit():
    stored = dict(np.load(STORED))
    computed = runs()
    assert sorted(computed) == sorted(stored), "the set of runs changed: rewrite the file on purpose"
    differ = [key for key in sorted(computed) if not same_bits(stored[key], computed[key])]
    assert not differ, f"{len(differ)} of {len(computed)} arrays differ, e.g. {differ[:10]}"


def test_the_comparison_tells_a_last_bit_and_a_signed_zero():
    a = np.array([1.0, 0.0, np.nan], np.float32)
    assert same_bits(a, a.copy())
    assert not same_bits(a, np.array([np.nextafter(np.float32(1), np.float32(2)), 0.0, np.nan], np.float32))
    assert not same_bits(a, np.array([1.0, -0.0, np.nan], np.float32))
    assert not same_bits(a, a.astype(np.float64))
