"""Bad CSV files a learner or a visitor may give, with what the message about each must say (the
checks of core/own_data.py, in the notebook and in the served page alike)."""

# (file, what the message must say): each names the problem, and the row and column where there
# is one. Rows count the file's lines from 1, the header included, as an editor shows them.
BAD_FILES = {
    "binary": (b"\x00\x01\x02x,y\n", "not text"),
    "xlsx": (b"PK\x03\x04\x14\x00\x06\x00", "Excel workbook (.xlsx), not a CSV file"),
    "pdf": (b"%PDF-1.7\n", "a PDF document, not a CSV file"),
    "not utf-8 nor cp1252": (b"x,y\n1,2\n\x81\x8d,3\n", "not text"),
    "control characters": (b"x,y\x07\n1,2\n3,4\n", "not plain text"),
    "empty": (b"", "The file is empty."),
    "blank": (b" \r\n\n\t\n", "The file is empty."),
    "a byte-order mark only": (b"\xef\xbb\xbf", "The file is empty."),
    "header only": (b"x,y\n", "a header row but no rows of numbers"),
    "one column": (b"x\n1\n2\n3\n", "one column only ('x' in row 1)"),
    "one row": (b"x,y\n1,2\n", "only 1 row of numbers; a line needs at least 2"),
    "one row, no header": (b"1,2\n", "only 1 row of numbers"),
    "a word": (b"x,y\n1,2\n3,abc\n4,5\n", "Row 3, column 2 ('y'), holds 'abc', which is not a number."),
    "a word, no header": (b"1,2\n3,4\nfive,6\n", "Row 3, column 1, holds 'five', which is not a number."),
    "NA": (b"x,y\n1,2\nNA,4\n5,6\n", "Row 3, column 1 ('x'), holds 'NA', which is not a number."),
    "thousands separator": (b'x,y\n1,2\n"1,500",4\n', "Row 3, column 1 ('x'), holds '1,500'"),
    "an empty cell": (b"x,y\n1,2\n3,\n", "Row 3 has no value in column 2 ('y')"),
    "NaN": (b"x,y\n1,2\n3,4\n5,NaN\n", "Row 4, column 2 ('y'), holds 'NaN', which is NaN (not a number)"),
    "nan": (b"x,y\n1,2\nnan,4\n", "Row 3, column 1 ('x'), holds 'nan', which is NaN"),
    "inf": (b"x,y\n1,2\n3,inf\n", "Row 3, column 2 ('y'), holds 'inf', which is infinite"),
    "-Infinity": (b"x,y\n1,2\n-Infinity,4\n", "Row 3, column 1 ('x'), holds '-Infinity', which is infinite"),
    "overflow": (b"x,y\n1,2\n3,1e400\n", "Row 3, column 2 ('y'), holds '1e400', which is too large"),
    "duplicate names": (b"x,y,x\n1,2,3\n4,5,6\n", "Columns 1 and 3 are both named 'x'"),
    "duplicate names, spaces": (b"a, b ,b\n1,2,3\n4,5,6\n", "Columns 2 and 3 are both named 'b'"),
    "a short row": (b"x,y\n1,2\n3\n4,5\n", "Row 3 has 1 value but the header has 2 columns"),
    "a long row": (b"x,y\n1,2\n3,4,5\n", "Row 3 has 3 values but the header has 2 columns"),
    "a short row, no header": (b"1,2,3\n4,5\n", "Row 2 has 2 values but the first row has 3 columns"),
    "an unclosed quote": (
        b'x,y\n1,2\n"3,4\n5,6\n',
        'Row 3 cannot be read as CSV: a quote mark (") is not closed',
    ),
    "text and one number column": (
        b"name,y\na,1\nb,2\n",
        "one column of numbers ('y'); 'name' holds no numbers",
    ),
    "text only": (b"a,b\nc,d\ne,f\n", "no column of numbers; 'a', 'b' hold no numbers"),
    "an empty column": (b"x,y\n1,\n2, \n", "one column of numbers ('x'); 'y' holds no numbers"),
    "a decimal comma with commas": (
        b'x,y\n1,2\n"1,5",3\n',
        "Row 3, column 1 ('x'), holds '1,5', which is not a number here: a decimal comma is read only",
    ),
    "separators only": (b",,\n ,\n", "The file holds no values, only separators."),
    "a title row": (
        b"My data\n\nx,y\n1,2\n",
        "Row 1 holds one value ('My data') but row 3 holds 2; remove the rows",
    ),
    "x one value": (b"x,y\n2,1\n2,3\n2,5\n", "Column 'x' holds 2 in every row, so no line"),
}
