"""`make load`'s class (benchmarks/load.py): served as docs/classroom.md serves one, and reported minute by
minute. The run itself takes minutes and asserts nothing; these check what it is given and how it counts."""

from benchmarks.load import Move, Visit, per_minute, server_args


def test_a_class_gets_a_preheated_kernel_each_and_no_refill_by_default():
    assert server_args(30, []) == ["POOL_SIZE=30", "FILL_DELAY=3600", "MAX_KERNELS=60"]
    assert server_args(8, ["POOL_SIZE=1"]) == ["POOL_SIZE=1", "MAX_KERNELS=9"]
    given = ["POOL_SIZE=8", "FILL_DELAY=5"]
    assert server_args(8, given) == [*given, "MAX_KERNELS=16"]
    assert server_args(30, ["MAX_KERNELS="]) == ["MAX_KERNELS=", "POOL_SIZE=30", "FILL_DELAY=3600"]


def test_each_minute_counts_its_own_moves():
    start = 1000.0
    early, late, page = Visit(0, False, 0.0), Visit(1, False, 30.0), Visit(2, True, 45.0)
    early.opened_at, late.opened_at, page.opened_at = start + 5, start + 70, start + 50
    early.moves = [Move("lr", 0.1, at=start + 10), Move("N", 0.3, at=start + 65)]
    late.moves = [Move("B", None, at=start + 80), Move("w0", 0.2, at=start + 90)]
    page.moves = [Move("lr", 0.05, browser=True, at=start + 55), Move("N", None, browser=True, at=start + 61)]
    rows = per_minute([early, late, page], start).splitlines()
    assert rows[2].startswith("| 1 | 2 | 1 / 1 | 100 / 100 ms | 1 / 1 | 50 / 50 ms |"), rows[2]
    # Minute 2: three protocol moves, one unanswered; the page's one move not redrawn.
    assert rows[3].startswith("| 2 | 3 | 2 / 3 | "), rows[3]
    assert rows[3].endswith("| 0 / 1 | n/a |"), rows[3]
    assert len(rows) == 4
