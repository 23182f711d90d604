"""A learner's own data: a CSV file read and checked, cut into the scan's microbatches; and the
example data set shipped with the project.

`parse_csv` turns the bytes of a file into a `Table` of float64 columns, or raises one `DataError`
whose message is a sentence for the learner naming the problem and its row or column.
`batches_from_rows` shuffles the rows with a seed and cuts them into N batches of B, as
`core.data.make_batches` makes its (n, b) arrays. `load_example` reads the shipped data set.
"""

from __future__ import annotations

import csv
import io
import math
import numbers
import re
from importlib import resources
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from core._checks import _as_array, _describe_dtype_problem, check_positive_int

MAX_BYTES = 5_000_000
"""The largest file `parse_csv` reads: 5 MB."""

MAX_ROWS = 100_000
"""The most rows of data a file may have (the header not counted)."""

SEPARATORS = (";", "\t", ",")
"""The separators told apart, in the order they are preferred when the first row splits on
several: a file that uses ";" writes its decimal commas with ",", so ";" goes first."""

EXAMPLE_TITLE = "Household income and food spending, Belgium, 1850s (235 households)"
"""What the example data set is, in a few words for the page."""

_EXAMPLE = "datasets/engel.csv"  # inside the package, read with importlib.resources

# Plain decimals with an optional exponent: float() alone would also take "1_000", "nan" and
# "infinity", which are reported on their own.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_COMMA_NUMBER = re.compile(r"[+-]?(?:\d+(?:,\d*)?|,\d+)(?:[eE][+-]?\d+)?")
# The first line Excel writes and reads to name a CSV file's separator: sep=; or sep=,
_SEP_LINE = re.compile(r'"?sep=(.)"?')
_NOT_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
# Other programs' files, by their first bytes: a learner who picked one is told what it is.
_SIGNATURES = (
    (b"PK\x03\x04", "a zip archive or an Excel workbook (.xlsx)"),
    (b"\xd0\xcf\x11\xe0", "an old Excel workbook (.xls)"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
)
_SAVE_AS = "save it from the spreadsheet as CSV"


class DataError(ValueError):
    """Data that cannot be used, with one sentence for the learner naming the problem and where."""


class Table(NamedTuple):
    """The numbers of a CSV file, and the two columns chosen as x and y.

    x, y: float64 arrays of shape (rows,), the chosen columns, every value finite.
    x_name, y_name: their names.
    names: the names of every column of numbers, in the file's order: the choice a page offers for
        x and y. Without a header row the columns are named "column 1", "column 2", ...
    values: float64 array of shape (rows, len(names)), those columns.
    skipped: the names of the columns that hold text only (labels, say), left out of `names`.
    header: whether the first row was read as the columns' names.
    separator: "," or ";" or a tab.
    decimal_comma: whether some value was written with a decimal comma ("1,5" in a ";" file).

    The arrays are read-only: a table can be kept as the page's state and shared.
    """

    x: np.ndarray
    y: np.ndarray
    x_name: str
    y_name: str
    names: tuple
    values: np.ndarray
    skipped: tuple
    header: bool
    separator: str
    decimal_comma: bool


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def _decode(content) -> str:
    """The text of `content` (bytes, or a str taken as it is), checked to be text within the limits."""
    if isinstance(content, str):
        data = content.encode("utf-8", errors="replace")
    elif isinstance(content, (bytes, bytearray, memoryview)):
        data = bytes(content)
    else:
        raise TypeError(f"content must be the file's bytes, got {type(content).__name__}")
    if len(data) > MAX_BYTES:
        raise DataError(
            f"The file is {len(data) / 1e6:.1f} MB; the most it may be is {MAX_BYTES / 1e6:g} MB."
        )
    for signature, what in _SIGNATURES:
        if data.startswith(signature):
            raise DataError(f"This file is {what}, not a CSV file: {_SAVE_AS}.")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encodings = ("utf-16",)  # Excel's "Unicode text"
    elif b"\x00" in data:
        raise DataError(f"This file is not text, so not a CSV file: {_SAVE_AS}.")
    else:
        # Excel on Windows writes its "CSV" in cp1252: only the names are then not UTF-8.
        encodings = ("utf-8-sig", "cp1252")
    for encoding in encodings:
        try:
            text = data.decode(encoding)
            break
        except UnicodeDecodeError:
            pass
    else:
        raise DataError(f"This file is not text, so not a CSV file: {_SAVE_AS}.")
    text = text.lstrip("\ufeff")
    if re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", text):
        raise DataError(f"This file is not plain text, so not a CSV file: {_SAVE_AS}.")
    if not text.strip():
        raise DataError("The file is empty.")
    return text


def _separator(text: str) -> tuple:
    """(separator, whether the first non-blank row is Excel's "sep=;" line, which names it).

    Otherwise the separator is the one of SEPARATORS that splits the first non-blank row in two or
    more cells and the next rows into as many; failing that, the first that splits the first row.
    """
    lines = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()][:6]
    named = _SEP_LINE.fullmatch(lines[0][1].strip())
    if named and named.group(1) in SEPARATORS:
        return named.group(1), True
    widths = {
        separator: [len(cells) for cells in csv.reader([line for _, line in lines], delimiter=separator)]
        for separator in SEPARATORS
    }
    splitting = [separator for separator in SEPARATORS if widths[separator][0] >= 2]
    if splitting:
        consistent = [separator for separator in splitting if len(set(widths[separator])) == 1]
        return (consistent or splitting)[0], False
    number, first = lines[0]
    first = first.strip()[:40]
    for separator in SEPARATORS:
        # A title above the table, as spreadsheets export it: say which rows to remove.
        below = [(lines[k][0], width) for k, width in enumerate(widths[separator]) if width >= 2]
        if below:
            raise DataError(
                f"Row {number} holds one value ({first!r}) but row {below[0][0]} holds {below[0][1]}; "
                "remove the rows above the columns' names or numbers."
            )
    raise DataError(
        f"The file has one column only ({first!r} in row {number}); a line needs two columns of "
        "numbers, x and y, separated by commas or semicolons."
    )


def _rows(text: str, separator: str, named: bool) -> list:
    """(row number, stripped cells) of each non-blank row, at most MAX_ROWS + 2 of them; without
    the first when it is the "sep=" line (`named`)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator, strict=True)
    rows = []
    # One more than a header and MAX_ROWS rows of data is enough to tell that there are too many.
    while len(rows) <= MAX_ROWS + 1 + named:
        start = reader.line_num + 1
        try:
            cells = next(reader, None)
        except csv.Error:
            raise DataError(
                f'Row {start} cannot be read as CSV: a quote mark (") is not closed, or stands '
                "inside a value."
            ) from None
        if cells is None:
            break
        cells = [cell.strip() for cell in cells]
        if any(cells):
            rows.append((reader.line_num, cells))
    return rows[1:] if named else rows


def _number(cell: str, separator: str):
    """(value, used a decimal comma), or None when the cell is not written as a number."""
    if _NUMBER.fullmatch(cell) or _NOT_FINITE.fullmatch(cell):
        return float(cell), False
    if separator == ";" and _COMMA_NUMBER.fullmatch(cell):
        return float(cell.replace(",", ".")), True
    return None


def _label(index: int, name: str, header: bool) -> str:
    return f"column {index + 1} ({name[:40]!r})" if header else f"column {index + 1}"


def _cell_problem(row: int, label: str, cell: str, separator: str) -> str:
    where = f"Row {row}, {label},"
    if not cell:
        return f"Row {row} has no value in {label}; every row needs a number in each column."
    if _NOT_FINITE.fullmatch(cell):
        what = "NaN (not a number)" if cell.lower().lstrip("+-") == "nan" else "infinite"
        return f"{where} holds {cell!r}, which is {what}; every value must be a finite number."
    if _NUMBER.fullmatch(cell) or (separator == ";" and _COMMA_NUMBER.fullmatch(cell)):
        return f"{where} holds {cell!r}, which is too large to be a finite number."
    if _COMMA_NUMBER.fullmatch(cell):
        return (
            f"{where} holds {cell!r}, which is not a number here: a decimal comma is read only in a "
            "file whose columns are separated by semicolons."
        )
    return f"{where} holds {cell[:40]!r}, which is not a number."


def _has_header(rows: list, separator: str) -> bool:
    """The first row names the columns when it has a word above a number, or words only."""
    first = rows[0][1]
    if len(rows) == 1:
        return any(_number(cell, separator) is None for cell in first)
    second = rows[1][1]
    if all(_number(cell, separator) is None for cell in first):
        return True
    return any(
        _number(cell, separator) is None and j < len(second) and _number(second[j], separator) is not None
        for j, cell in enumerate(first)
    )


def _names(rows: list, header: bool) -> tuple:
    width = len(rows[0][1])
    if not header:
        return tuple(f"column {j + 1}" for j in range(width))
    names = tuple(cell or f"column {j + 1}" for j, cell in enumerate(rows[0][1]))
    for j, name in enumerate(names):
        if name in names[:j]:
            first = names.index(name)
            raise DataError(
                f"Columns {first + 1} and {j + 1} are both named {name!r}; rename one so that each "
                "column has its own name."
            )
    return names


def _check_widths(data: list, width: int, header: bool) -> list:
    """The rows cut to `width` cells; a shorter row, or a longer one with more values, is an error."""
    above = "the header has" if header else "the first row has"
    for row, cells in data:
        if len(cells) < width or any(cells[width:]):
            count = len(cells) if len(cells) < width else width + sum(1 for cell in cells[width:] if cell)
            raise DataError(
                f"Row {row} has {_plural(count, 'value')} but {above} {_plural(width, 'column')}; "
                "every row needs one value in each column."
            )
    return [(row, cells[:width]) for row, cells in data]


def _text_columns(data: list, width: int, separator: str) -> set:
    """The columns in which no cell is written as a number: labels, left out."""
    return {j for j in range(width) if all(_number(cells[j], separator) is None for _, cells in data)}


def parse_csv(content, *, x_column=None, y_column=None) -> Table:
    """Read a CSV file's bytes into a `Table` of float64 columns, x and y chosen among them.

    content: the file's bytes (bytes, bytearray or memoryview, as a file upload gives them; a str
        is taken as the text itself), at most MAX_BYTES. UTF-8 with or without a byte-order mark
        (cp1252 and UTF-16 with a mark are read too, for the names Excel writes in them).
    Separators: ",", ";" or a tab, told from the first rows (the one that splits them alike). In a
    ";" file a decimal comma ("1,5") is read as a decimal point, as European spreadsheets write CSV.
    Quoted fields follow the CSV rules. A header row is optional: the first row is one when it holds
    words above numbers.
    Blank rows are skipped; row numbers in messages count every line, as an editor shows them.
    Columns holding only text (labels) are left out and listed in `Table.skipped`; every other
    column must hold a finite number in every row.
    x_column, y_column: the names (as in `Table.names`) of the columns to use; by default the first
        two columns of numbers in the file's order, or the first one that the other is not.

    Returns a `Table`. Raises `DataError`, one sentence for the learner, for: a file that is not
    CSV text, an empty file, a header only, one column, a cell that is not a number, NaN or inf,
    more than MAX_BYTES or MAX_ROWS, two columns of one name, a row with more or fewer values than
    the header, fewer than 2 rows, an unknown column, x and y the same column, and an x column of
    one value in every row (no line fits it).
    """
    text = _decode(content)
    separator, named = _separator(text)
    rows = _rows(text, separator, named)
    if not rows:
        raise DataError("The file holds no values, only separators.")
    header = _has_header(rows, separator)
    data = rows[1:] if header else rows
    if len(data) > MAX_ROWS:
        raise DataError(
            f"The file has more than {MAX_ROWS:,} rows of data; the most it may have is {MAX_ROWS:,}."
        )
    if not data:
        raise DataError("The file has a header row but no rows of numbers under it.")
    names = _names(rows, header)
    width = len(names)
    data = _check_widths(data, width, header)
    text_columns = _text_columns(data, width, separator)
    columns = [j for j in range(width) if j not in text_columns]
    # Check row by row, so that the first problem in the file is the one reported.
    values = np.empty((len(data), len(columns)))
    decimal_comma = False
    for i, (row, cells) in enumerate(data):
        for k, j in enumerate(columns):
            parsed = _number(cells[j], separator)
            if parsed is None or not math.isfinite(parsed[0]):
                raise DataError(_cell_problem(row, _label(j, names[j], header), cells[j], separator))
            values[i, k] = parsed[0]
            decimal_comma |= parsed[1]
    # A column with no name and no value (a separator at the end of every row) is no column at all.
    skipped = tuple(
        names[j]
        for j in sorted(text_columns)
        if (header and rows[0][1][j]) or any(cells[j] for _, cells in data)
    )
    if len(columns) < 2:
        found = f"one column of numbers ({names[columns[0]]!r})" if columns else "no column of numbers"
        note = (
            f"; {', '.join(map(repr, skipped))} {'holds' if len(skipped) == 1 else 'hold'} no numbers"
            if skipped
            else ""
        )
        raise DataError(f"The file has {found}{note}; a line needs two, x and y.")
    if len(data) < 2:
        raise DataError("The file has only 1 row of numbers; a line needs at least 2.")
    values.flags.writeable = False
    table = Table(
        x=values[:, 0],
        y=values[:, 1],
        x_name=names[columns[0]],
        y_name=names[columns[1]],
        names=tuple(names[j] for j in columns),
        values=values,
        skipped=skipped,
        header=header,
        separator=separator,
        decimal_comma=decimal_comma,
    )
    return choose_columns(table, x_column, y_column)


def choose_columns(table: Table, x_column=None, y_column=None) -> Table:
    """`table` with x and y taken from the columns named x_column and y_column (names in
    `table.names`); a name left None takes the first column of numbers that the other is not.

    Raises `DataError` for a name that is no column of numbers, for x and y the same column, and
    for an x column of one value in every row.
    """
    for which, name in (("x", x_column), ("y", y_column)):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"{which}_column must be a column's name (a str), got {type(name).__name__}")
        if name is not None and name not in table.names:
            if name in table.skipped:
                raise DataError(f"Column {name!r} holds no numbers; choose a column of numbers for {which}.")
            listed = ", ".join(map(repr, table.names))
            raise DataError(f"There is no column named {name!r}; the columns of numbers are {listed}.")
    if x_column is not None and x_column == y_column:
        raise DataError(f"x and y are both column {x_column!r}; choose two different columns.")
    if x_column is None:
        x_column = next(name for name in table.names if name != y_column)
    if y_column is None:
        y_column = next(name for name in table.names if name != x_column)
    x = table.values[:, table.names.index(x_column)]
    y = table.values[:, table.names.index(y_column)]
    if np.all(x == x[0]):
        raise DataError(
            f"Column {x_column!r} holds {x[0]:g} in every row, so no line through the data can be "
            "fitted; choose another column for x."
        )
    return table._replace(x=x, y=y, x_name=x_column, y_name=y_column)


def max_steps(rows, b) -> int:
    """The most batches of b rows that `rows` rows give without using a row twice: rows // b."""
    return check_positive_int("rows", rows) // check_positive_int("b", b)


def _rows_array(name: str, value) -> np.ndarray:
    array = _as_array(name, value)
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise TypeError(_describe_dtype_problem(name, array.dtype))
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, one value per row; got shape {tuple(array.shape)}")
    array = np.asarray(array, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite; {name}[{int(np.argmin(np.isfinite(array)))}] is not")
    return array


def batches_from_rows(x, y, n, b, *, seed, replace=False, standardize=False, dtype=np.float32):
    """N microbatches of B rows of the data (x, y), as two (n, b) NumPy arrays (x_batches, y_batches).

    x, y: 1-D real arrays of one length, the rows (a `Table`'s x and y), finite.
    The rows are shuffled with `seed` (a non-negative integer) and taken in that order, B to a
    batch. When n*b exceeds the rows, replace=False raises `DataError` naming the most steps for
    this B (`max_steps`); replace=True uses the rows again, each pass over them (an epoch) in a new
    shuffle, so every row appears equally often, give or take one. Either way the first n*b rows of
    one sequence are taken: growing n appends batches and leaves the others as they were, and while
    n*b fits in the rows replace changes nothing.

    standardize=True replaces x by (x - mean(x)) / std(x) over all rows (float64, std with ddof=0;
    y is left as it is). Why: each step of the model y = w*x + b multiplies the error in (w, b) by
    I - c*lr*[[S, X], [X, B]] (S = sum x**2, X = sum x over a batch), and when |mean(x)| is large
    next to std(x) that matrix's condition number is large: the loss's valley over (w, b) is long
    and narrow, and an lr small enough for its steep side crawls along it. Standardised, the matrix
    is close to B times the identity and one lr suits w and b alike. Then w, b fit the standardised
    x; in x's own units the slope is w / std(x) and the intercept b - w * mean(x) / std(x).

    The values are computed in float64 and rounded once to `dtype` (a floating dtype, float32 by
    default, as `core.data.make_batches`). Raises `DataError` for too few rows and for values that
    overflow `dtype`, ValueError or TypeError for arguments that are not as described.
    """
    x, y = _rows_array("x", x), _rows_array("y", y)
    if x.shape != y.shape:
        raise ValueError(f"x and y must have one length, one value per row; got {x.size} and {y.size}")
    n, b = check_positive_int("n", n), check_positive_int("b", b)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}"[:200])
    try:
        dtype = jnp.dtype(dtype)  # NumPy alone does not know bfloat16
    except TypeError:
        raise TypeError(f"dtype must be a floating dtype, got {dtype!r}") from None
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"dtype must be a floating dtype, got {dtype}")
    rows = x.size
    if rows < 2:
        raise DataError(f"The data have {_plural(rows, 'row')}; a line needs at least 2.")
    if n * b > rows and not replace:
        most = rows // b
        fewer = f"with B = {b} take N at most {most}" if most else f"take B at most {rows:,}"
        raise DataError(
            f"N x B = {n} x {b} = {n * b:,} rows are needed but the data have {rows:,}: {fewer}, "
            "or let the batches use rows again."
        )
    if standardize:
        spread = x.std()
        if not spread > 0:
            raise DataError("x holds one value in every row, so it cannot be standardised.")
        x = (x - x.mean()) / spread
    rng = np.random.default_rng([int(seed), 2])  # stream 2: core.data draws on streams 0 and 1
    order = np.concatenate([rng.permutation(rows) for _ in range(-(-n * b // rows))])[: n * b]
    batches = []
    for name, values in (("x", x), ("y", y)):
        with np.errstate(over="ignore"):  # reported just below, naming the column
            cast = values[order].reshape(n, b).astype(dtype)
        if not np.all(np.isfinite(cast)):
            largest = float(np.max(np.abs(values)))
            raise DataError(f"{name} holds {largest:g}, too large for {dtype}; rescale that column.")
        batches.append(cast)
    return batches[0], batches[1]


def load_example() -> Table:
    """The example data set (datasets/engel.csv in this package, its source and licence in
    datasets/README.md): Engel's food expenditure data, 235 Belgian working class households of
    the 1850s, x = yearly income and y = yearly food expenditure, both in thousands of Belgian
    francs (the file's francs divided by 1000, so that x is of order 1, as the generated data are).
    Its least-squares line is close to y = 0.485*x + 0.147, R^2 = 0.83.

    Returns a `Table` with names ("income", "food"), float64 arrays of shape (235,).
    """
    table = parse_csv(resources.files("core").joinpath(_EXAMPLE).read_bytes())
    values = table.values / 1000.0
    values.flags.writeable = False
    names = ("income", "food")
    return table._replace(
        x=values[:, 0], y=values[:, 1], x_name=names[0], y_name=names[1], names=names, values=values
    )
