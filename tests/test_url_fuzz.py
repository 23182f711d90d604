"""Issue 7's URL fuzz: generated query strings of every hostile kind reach the explorer, which
renders defaults with a notice, quotes nothing back as markup, and keeps a valid share link."""

import math
import random
import re
from urllib.parse import quote

import pytest

from widgets import Explorer
from widgets.settings import (
    CHOICES,
    DEFAULTS,
    FLAGS,
    HIDEABLE,
    INTEGERS,
    RANGES,
    VIEWS,
    Presentation,
    Settings,
    from_query,
    presentation_from_query,
    to_query,
)

KEYS = [*Settings._fields, "preset", "view", "hide", "foo", "", "lr[]", "__proto__", "N\x00", "ＬＲ"]
VALUES = [
    "1e308",
    "-1e308",
    "1e-320",
    "1e400",
    "-1e400",
    "9" * 400,
    "0",
    "-0",
    "1",
    "2.5",
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "0x10",
    "1_000",
    " 5 ",
    "5e",
    "١٢",
    "٣",
    "½",
    "ＮａＮ",
    "",
    "   ",
    "true",
    "None",
    "[1]",
    "{}",
    "<script>alert(1)</script>",
    '"><img src=x onerror="window.__pwned=1">',
    "javascript:alert(1)",
    "'; DROP TABLE x; --",
    "%00",
    "\x00",
    "\u202e",
    "😀" * 50,
    "x" * 5000,
    "projector",
    "default",
    "lr,N,B",
    "presets,playback,share",
    ",,,",
    "worked-example",
    "diverging",
    "sum",
    "mean",
    "both",
    "gaussian",
    "ones",
    "ones\n",
    "engel",
    "own",  # a link cannot carry a visitor's file: never the page's data
    "false",
    "off",
    "</style><b>x</b>",
    "\\",
    "&",
    "=",
    "%",
]


def generated_queries(count=240, seed=0):
    """Query strings mixing every key with hostile values: repeated keys, raw and percent-encoded
    values, stray separators, and a few very long or very many parameters."""
    rng = random.Random(seed)
    queries = []
    for i in range(count):
        parts = []
        for _ in range(rng.randint(1, 8)):
            key, value = rng.choice(KEYS), rng.choice(VALUES)
            if rng.random() < 0.5:
                key, value = quote(key), quote(value)
            parts.append(f"{key}={value}" if rng.random() < 0.9 else key)
        if i % 40 == 0:
            parts += [f"k{j}=1" for j in range(150)]  # past the 100-parameter limit
        if i % 17 == 0:
            parts.append(parts[0])  # a repeated key
        separator = rng.choice(["&", "&&", "&;"])
        queries.append(separator.join(parts) + rng.choice(["", "&", "#frag", "&=&"]))
    return queries


QUERIES = generated_queries()


def _valid(settings: Settings) -> None:
    for name, value in settings._asdict().items():
        if name in CHOICES:
            assert value in CHOICES[name], (name, value)
            continue
        if name in FLAGS:
            assert type(value) is bool, (name, value)
            continue
        low, high = RANGES[name]
        assert type(value) is (int if name in INTEGERS else float), (name, value)
        assert math.isfinite(value) and low <= value <= high, (name, value)


def test_there_are_at_least_200_distinct_queries():
    assert len(set(QUERIES)) >= 200


@pytest.mark.parametrize("query", QUERIES[:120])
def test_every_generated_query_gives_valid_settings_and_short_notices(query):
    settings, notices = from_query(query)
    presentation, more = presentation_from_query(query)
    _valid(settings)
    assert settings.kind != "own", "a link's data are never the visitor's own"
    assert presentation.view in VIEWS and set(presentation.hide) <= set(HIDEABLE)
    for notice in notices + more:
        assert isinstance(notice, str) and len(notice) < 300, notice
    # the share link reproduces what is on screen, exactly and without notices
    link = to_query(settings, presentation)
    assert from_query(link) == (settings, [])
    assert presentation_from_query(link) == (presentation, [])


@pytest.fixture(scope="module")
def explorer():
    return Explorer(background=False)


def test_the_explorer_shows_every_notice_as_text_never_as_markup(explorer):
    for query in QUERIES:
        settings, notices = from_query(query)
        presentation, more = presentation_from_query(query)
        explorer.apply(settings)
        explorer._show_texts(notices + more)
        shown = explorer.notice.value
        # the only markup in a notice is the explorer's own line breaks
        assert re.sub(r"<br>", "", shown).count("<") == 0, shown[:300]
        assert (shown == "") == (notices + more == [])
        _valid(explorer.settings)
        assert explorer.settings == settings
    assert "<script" not in explorer.status.value and "<script" not in explorer.step_info.value


def test_values_python_reads_as_numbers_are_taken_others_fall_back():
    # float() reads Unicode digits and underscores; the settings take what it reads, in range
    assert from_query("N=١٢")[0].N == 12
    assert from_query("lr=1_0")[0].lr == RANGES["lr"][1]
    assert from_query("w0=ＮａＮ")[0].w0 == DEFAULTS.w0
    assert from_query("seed=-0")[0].seed == 0


def test_presentation_parameters():
    assert presentation_from_query("view=projector&hide=seed,noise&hide=presets") == (
        Presentation("projector", ("noise", "seed", "presets")),
        [],
    )
    presentation, notices = presentation_from_query("view=<b>big</b>&hide=lr,<i>x</i>,N")
    assert presentation == Presentation("default", ("lr", "N"))
    assert len(notices) == 2 and "'<b>big</b>'" in notices[0]
    presentation, notices = presentation_from_query("view=projector&view=default")
    assert presentation.view == "default" and "given 2 times" in notices[0]
    assert from_query("view=projector&hide=lr") == (DEFAULTS, [])  # not the run's business
    assert presentation_from_query("hide=" + ",".join(["bogus"] * 50))[1].__len__() == 10
