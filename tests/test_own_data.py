"""A learner's own CSV data (core/own_data.py): every bad file gets one sentence naming the problem
and its row or column; good files in their common dialects are read; rows become batches; and the
shipped example data set fits a line as float64 least squares says."""

import hashlib
import re
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from core import optimum, pytree_history
from core.own_data import (
    MAX_BYTES,
    MAX_ROWS,
    DataError,
    Table,
    batches_from_rows,
    choose_columns,
    load_example,
    max_steps,
    parse_csv,
)
from harness.support.own_data import BAD_FILES

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", BAD_FILES)
def test_each_bad_file_gets_one_sentence_naming_the_problem_and_where(name):
    content, expected = BAD_FILES[name]
    with pytest.raises(DataError, match=re.escape(expected)) as caught:
        parse_csv(content)
    message = str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert message[0].isupper() and message.endswith(".") and "\n" not in message, message
    assert message.count(". ") == 0, f"one sentence: {message}"


def test_files_past_the_limits_are_refused_and_files_at_them_are_read():
    row = b"1.25,2.5\n"
    at_rows = b"x,y\n0,0\n" + row * (MAX_ROWS - 1)
    assert parse_csv(at_rows).x.shape == (MAX_ROWS,)
    with pytest.raises(
        DataError, match=re.escape("more than 100,000 rows of data; the most it may have is 100,000")
    ):
        parse_csv(at_rows + row)
    with pytest.raises(DataError, match="more than 100,000 rows"):
        parse_csv(row * (MAX_ROWS + 1))  # no header: the first row is data too
    assert MAX_BYTES == 5_000_000
    with pytest.raises(DataError, match=re.escape("The file is 5.0 MB; the most it may be is 5 MB.")):
        parse_csv(b"x,y\n" + b" " * MAX_BYTES)


def test_a_byte_order_mark_is_not_part_of_the_first_name():
    for bom in (b"\xef\xbb\xbf", b""):
        table = parse_csv(bom + b"income,food\r\n1,2\r\n3,5\r\n")
        assert table.names == ("income", "food") and table.x_name == "income"
        np.testing.assert_array_equal(table.x, [1.0, 3.0])
    utf16 = "x;y\r\n1,5;2\r\n2,5;4\r\n".encode("utf-16")  # Excel's "Unicode text", with its mark
    assert parse_csv(utf16).names == ("x", "y")


def test_semicolons_with_decimal_commas_or_points():
    table = parse_csv("Größe;Gewicht\n1,5;2,25\n-2,0;3e2\n,5;7\n".encode())
    assert table.separator == ";" and table.decimal_comma
    assert table.names == ("Größe", "Gewicht")
    np.testing.assert_array_equal(table.values, [[1.5, 2.25], [-2.0, 300.0], [0.5, 7.0]])
    points = parse_csv(b"x;y\n1.5;2\n2.5;4\n")
    assert points.separator == ";" and not points.decimal_comma
    np.testing.assert_array_equal(points.x, [1.5, 2.5])
    with pytest.raises(DataError, match=re.escape("Row 3, column 2 ('y'), holds '1.234,5'")):
        parse_csv(b"x;y\n1;2\n3;1.234,5\n")  # thousands separators are not guessed at


def test_commas_tabs_quotes_and_cp1252_names():
    table = parse_csv(b'"speed (km/h)","distance, m"\n"4",2\n7,"4.5"\n')
    assert table.separator == "," and table.names == ("speed (km/h)", "distance, m")
    np.testing.assert_array_equal(table.values, [[4.0, 2.0], [7.0, 4.5]])
    tabs = parse_csv(b"a\tb\n1\t2\n3\t4\n")
    assert tabs.separator == "\t" and tabs.names == ("a", "b")
    assert parse_csv(b"r\xe9sultat,y\n1,2\n3,4\n").names == ("résultat", "y")
    assert parse_csv("x,y\n1,2\n3,4\n").names == ("x", "y")  # text as well as bytes
    assert parse_csv(memoryview(b"x,y\n1,2\n3,4\n")).names == ("x", "y")  # as FileUpload gives it
    with pytest.raises(TypeError, match="content must be the file's bytes"):
        parse_csv(["x,y"])


def test_with_and_without_a_header():
    with_header = parse_csv(b"x,y\n1,2\n3,4\n")
    without = parse_csv(b"1,2\n3,4\n")
    assert with_header.header and not without.header
    np.testing.assert_array_equal(with_header.values, without.values)
    assert without.names == ("column 1", "column 2")
    assert parse_csv(b" , y\n1,2\n3,4\n").names == ("column 1", "y")  # an empty name gets a number
    assert parse_csv(b"x,y\n-1,+2\n.5,3.\n1E3,4e-2\n").values.tolist() == [[-1, 2], [0.5, 3], [1000, 0.04]]


def test_blank_rows_are_skipped_and_rows_are_counted_as_lines():
    table = parse_csv(b"x,y\n\n1,2\n  \n,\n3,4\n\n")
    np.testing.assert_array_equal(table.x, [1.0, 3.0])
    with pytest.raises(DataError, match=re.escape("Row 5, column 2 ('y'), holds 'z'")):
        parse_csv(b"x,y\n\n1,2\n\n3,z\n")


def test_columns_to_choose_from_and_the_choice():
    content = b"state,area,people,income\nA,1,10,100\nB,2,30,120\nC,4,20,90\n"
    table = parse_csv(content)
    assert isinstance(table, Table)
    assert table.names == ("area", "people", "income") and table.skipped == ("state",)
    assert (table.x_name, table.y_name) == ("area", "people")
    np.testing.assert_array_equal(table.y, [10.0, 30.0, 20.0])
    chosen = parse_csv(content, x_column="income", y_column="area")
    np.testing.assert_array_equal(chosen.x, [100.0, 120.0, 90.0])
    np.testing.assert_array_equal(chosen.y, [1.0, 2.0, 4.0])
    again = choose_columns(table, "income", "area")
    assert (again.x_name, again.y_name) == (chosen.x_name, chosen.y_name)
    np.testing.assert_array_equal(again.x, chosen.x)
    assert choose_columns(table, y_column="area").x_name == "people"
    assert choose_columns(table, x_column="people").y_name == "area"
    assert table.x.dtype == table.y.dtype == table.values.dtype == np.float64
    assert not table.values.flags.writeable and not chosen.x.flags.writeable
    for x, y, expected in (
        (
            "rooms",
            None,
            "There is no column named 'rooms'; the columns of numbers are 'area', 'people', 'income'.",
        ),
        ("state", None, "Column 'state' holds no numbers; choose a column of numbers for x."),
        (None, "state", "Column 'state' holds no numbers; choose a column of numbers for y."),
        ("area", "area", "x and y are both column 'area'; choose two different columns."),
    ):
        with pytest.raises(DataError, match=re.escape(expected)):
            parse_csv(content, x_column=x, y_column=y)
    with pytest.raises(TypeError, match="x_column must be a column's name"):
        parse_csv(content, x_column=0)


def test_an_empty_column_from_trailing_separators_is_no_column():
    table = parse_csv(b"x,y,\n1,2,\n2,4,\n")
    assert table.names == ("x", "y") and table.skipped == ()


def test_a_column_of_numbers_with_one_word_is_an_error_not_text():
    with pytest.raises(DataError, match=re.escape("Row 4, column 2 ('y'), holds 'oops'")):
        parse_csv(b"x,y\n1,2\n2,3\n3,oops\n")


# Batches.

X = np.arange(10.0)
Y = 3.0 * X + 1.0


def test_batches_are_the_rows_shuffled_with_the_seed_pairs_kept():
    xb, yb = batches_from_rows(X, Y, 2, 5, seed=7)
    assert xb.shape == yb.shape == (2, 5) and xb.dtype == yb.dtype == np.float32
    assert sorted(xb.ravel().tolist()) == X.tolist()  # every row once
    np.testing.assert_array_equal(yb, 3.0 * xb + 1.0)  # x and y of a row stay together
    again = batches_from_rows(X, Y, 2, 5, seed=7)
    np.testing.assert_array_equal(again[0], xb)
    other = batches_from_rows(X, Y, 2, 5, seed=8)[0]
    assert not np.array_equal(other, xb) and sorted(other.ravel()) == sorted(xb.ravel())
    assert not np.array_equal(xb.ravel(), X)  # shuffled, not in the file's order
    wide = batches_from_rows(X, Y, 2, 5, seed=7, dtype=np.float64)[0]
    assert wide.dtype == np.float64 and np.array_equal(wide, xb)


def test_growing_n_appends_batches():
    small = batches_from_rows(X, Y, 2, 3, seed=1)[0]
    large = batches_from_rows(X, Y, 3, 3, seed=1)[0]
    np.testing.assert_array_equal(large[:2], small)
    longer = batches_from_rows(X, Y, 9, 3, seed=1, replace=True)[0]
    np.testing.assert_array_equal(longer[:3], large)


def test_too_few_rows_name_the_most_steps_unless_rows_are_used_again():
    assert max_steps(235, 16) == 14 and max_steps(10, 11) == 0
    with pytest.raises(DataError) as caught:
        batches_from_rows(X, Y, 4, 3, seed=0)
    assert str(caught.value) == (
        "N x B = 4 x 3 = 12 rows are needed but the data have 10: with B = 3 take N at most 3, "
        "or let the batches use rows again."
    )
    with pytest.raises(DataError, match=re.escape("take B at most 10, or let the batches use rows again")):
        batches_from_rows(X, Y, 1, 11, seed=0)
    xb, yb = batches_from_rows(X, Y, 7, 4, seed=3, replace=True)
    assert xb.shape == (7, 4)
    counts = np.bincount(xb.ravel().astype(int), minlength=10)
    assert counts.max() - counts.min() <= 1  # each pass over the rows is a fresh shuffle
    np.testing.assert_array_equal(yb, 3.0 * xb + 1.0)
    # While N*B fits in the rows, allowing reuse changes nothing.
    np.testing.assert_array_equal(
        batches_from_rows(X, Y, 2, 4, seed=3, replace=True)[0], batches_from_rows(X, Y, 2, 4, seed=3)[0]
    )


def test_standardize_gives_x_zero_mean_and_unit_variance_and_leaves_y():
    x = np.array([1000.0, 1010.0, 1030.0, 1060.0])
    y = np.array([1.0, 2.0, 3.0, 4.0])
    xb, yb = batches_from_rows(x, y, 2, 2, seed=0, standardize=True, dtype=np.float64)
    assert abs(xb.mean()) < 1e-12 and abs(xb.std() - 1.0) < 1e-12
    assert sorted(yb.ravel()) == y.tolist()
    # The transform is over all rows, not over the batches taken.
    part = batches_from_rows(x, y, 1, 2, seed=0, standardize=True, dtype=np.float64)[0]
    np.testing.assert_array_equal(part, xb[:1])
    with pytest.raises(DataError, match="one value in every row, so it cannot be standardised"):
        batches_from_rows(np.ones(4), y, 2, 2, seed=0, standardize=True)


def test_batches_reject_bad_arguments_clearly():
    with pytest.raises(
        DataError, match=re.escape("x holds 900000, too large for float16; rescale that column")
    ):
        batches_from_rows(X * 1e5, Y, 2, 5, seed=0, dtype=np.float16)
    with pytest.raises(ValueError, match="one length"):
        batches_from_rows(X, Y[:-1], 1, 2, seed=0)
    with pytest.raises(ValueError, match="x must be 1-D"):
        batches_from_rows(X.reshape(2, 5), Y, 1, 2, seed=0)
    with pytest.raises(ValueError, match=re.escape("y must be finite; y[3] is not")):
        batches_from_rows(X, np.where(X == 3, np.nan, Y), 1, 2, seed=0)
    with pytest.raises(DataError, match="The data have 1 row; a line needs at least 2."):
        batches_from_rows([1.0], [2.0], 1, 1, seed=0)
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        batches_from_rows(X, Y, 1, 2, seed=-1)
    with pytest.raises(ValueError, match="n must be at least 1"):
        batches_from_rows(X, Y, 0, 2, seed=0)
    with pytest.raises(TypeError, match="dtype must be a floating dtype"):
        batches_from_rows(X, Y, 1, 2, seed=0, dtype=np.int32)
    with pytest.raises(TypeError, match="x must hold real floating-point values"):
        batches_from_rows(X.astype(complex), Y, 1, 2, seed=0)
    assert batches_from_rows(np.arange(4), np.arange(4), 2, 2, seed=0)[0].dtype == np.float32  # integers
    assert batches_from_rows(X, Y, 2, 5, seed=0, dtype="bfloat16")[0].dtype == jnp.bfloat16


def test_a_parsed_table_feeds_the_batches():
    table = parse_csv(b"x;y\n0,5;1\n1,5;3\n2,5;5\n3,5;7\n")
    xb, yb = batches_from_rows(table.x, table.y, 2, 2, seed=0, dtype=np.float64)
    np.testing.assert_allclose(optimum(xb, yb, intercept=True), (2.0, 0.0), atol=1e-12)


# The example data set.


def test_the_example_is_the_shipped_file_in_thousands_of_francs():
    path = ROOT / "core" / "datasets" / "engel.csv"
    assert path.stat().st_size <= 100_000
    assert hashlib.sha256(path.read_bytes()).hexdigest() == (
        "796c3da0406291dd324c51901b51386be12b5f52e330afaf69584f57c06ad45c"
    )
    readme = (ROOT / "core" / "datasets" / "README.md").read_text()
    for needed in ("engel.csv", "Licence", "public domain", "Source", "statsmodels", "R^2 = 0.830"):
        assert needed in readme, needed
    table = load_example()
    assert (table.x_name, table.y_name, table.names) == ("income", "food", ("income", "food"))
    assert table.x.shape == table.y.shape == (235,) and table.x.dtype == np.float64
    np.testing.assert_allclose(table.values * 1000, parse_csv(path.read_bytes()).values, rtol=1e-15)
    assert 0.3 < table.x.min() and table.x.max() < 5.0  # thousands of francs: x of order 1
    assert not table.x.flags.writeable


def test_the_example_fits_a_line_as_float64_least_squares_says():
    table = load_example()
    w, b = np.polyfit(table.x, table.y, 1)
    r2 = np.corrcoef(table.x, table.y)[0, 1] ** 2
    assert abs(w - 0.4852) < 1e-4 and abs(b - 0.1475) < 1e-4 and 0.829 < r2 < 0.831
    # 235 = 5 * 47: the batches hold every row once, so their optimum is the data's.
    for dtype, rtol in ((np.float64, 1e-12), (np.float32, 1e-6)):
        for seed in (0, 1):
            xb, yb = batches_from_rows(table.x, table.y, 5, 47, seed=seed, dtype=dtype)
            np.testing.assert_allclose(optimum(xb, yb, intercept=True), (w, b), rtol=rtol)
    # Standardised x: the slope is w * std(x) and the intercept mean(y).
    xb, yb = batches_from_rows(table.x, table.y, 5, 47, seed=0, standardize=True, dtype=np.float64)
    np.testing.assert_allclose(
        optimum(xb, yb, intercept=True), (w * table.x.std(), table.y.mean()), rtol=1e-12
    )


def test_the_separator_is_the_one_that_splits_every_row_alike():
    # A ";" inside the first name of a comma file does not make it a ";" file.
    table = parse_csv(b"weight;kg,height\n1,2\n3,5\n")
    assert table.separator == "," and table.names == ("weight;kg", "height")
    assert parse_csv(b"x;y\n1,5;2\n2;3,25\n").values.tolist() == [[1.5, 2.0], [2.0, 3.25]]
    with pytest.raises(DataError, match=re.escape("one column only ('height' in row 3)")):
        parse_csv(b"\n\nheight\n1\n2\n")


def test_the_example_trains_at_the_explorers_default_settings():
    # In thousands of francs x is of order 1, as the generated data are: the w, b model at the
    # explorer's defaults (lr 0.01, N 100, B 16, the sum loss) settles near the optimum instead of
    # needing an lr a million times smaller. 1,600 rows from 235 use each row about 7 times.
    table = load_example()
    xb, yb = batches_from_rows(table.x, table.y, 100, 16, seed=0, replace=True)
    run = pytree_history({"w": 0.0, "b": 0.0}, 0.01, xb, yb)
    w_star, b_star = optimum(xb, yb, intercept=True)
    assert run.diverged_at is None
    assert abs(run.params["w"][-1] - w_star) < 0.05 and abs(run.params["b"][-1] - b_star) < 0.05


def test_excels_sep_line_names_the_separator_and_is_no_row():
    for first in (b"sep=;", b'"sep=;"'):
        table = parse_csv(first + b"\r\nx;y\r\n1,5;2\r\n2;3\r\n")
        assert table.separator == ";" and table.names == ("x", "y") and table.header
        np.testing.assert_array_equal(table.x, [1.5, 2.0])
    with pytest.raises(DataError, match=re.escape("Row 4, column 2 ('y'), holds 'z'")):
        parse_csv(b"sep=,\nx,y\n1,2\n3,z\n")
    with pytest.raises(DataError, match="The file holds no values"):
        parse_csv(b"sep=,\n")


def test_any_file_gives_a_table_or_one_sentence_never_another_error():
    # hypothesis is not installed here: a seeded generator of small CSV-like files in place of it,
    # its cells drawn from numbers and from every kind of bad cell above.
    rng = np.random.default_rng(0)
    cells = [
        "1",
        "-3",
        "1e3",
        ".5",
        "7.",
        "x",
        "",
        " ",
        "nan",
        "inf",
        "1e999",
        "1,5",
        '"4"',
        '"a,b"',
        '"',
        "é",
    ]
    outcomes = {"table": 0, "error": 0}
    for _ in range(3000):
        separator = (",", ";", "\t")[rng.integers(3)]
        columns = int(rng.integers(1, 4))
        lines = [separator.join("abca"[:columns])] if rng.random() < 0.5 else []
        for _ in range(rng.integers(1, 6)):
            width = columns if rng.random() < 0.9 else int(rng.integers(1, 5))
            good = (1.0, 0.9, 0.5)[rng.integers(3)]  # how many of the row's cells are numbers
            lines.append(
                separator.join(
                    f"{rng.standard_normal():.3f}" if rng.random() < good else cells[rng.integers(len(cells))]
                    for _ in range(width)
                )
            )
        content = (
            ("\r\n" if rng.random() < 0.3 else "\n")
            .join(lines)
            .encode("utf-8-sig" if rng.random() < 0.2 else "utf-8")
        )
        try:
            table = parse_csv(content)
        except DataError as error:
            message = str(error)
            assert message.endswith(".") and "\n" not in message, (content, message)
            outcomes["error"] += 1
            continue
        rows, width = table.values.shape
        assert rows >= 2 and width == len(table.names) >= 2 and np.all(np.isfinite(table.values))
        assert table.x.shape == table.y.shape == (rows,) and len(set(table.names)) == width
        outcomes["table"] += 1
    assert min(outcomes.values()) > 400, outcomes  # both outcomes are exercised
