"""A visitor's own CSV file in the served dashboard, in Chromium: chosen with the page's file control,
it runs, every chart draws its run; a bad file and a file over the size limit get their sentence
under the controls and change nothing on the charts; a move then runs on the file's rows."""

import shutil
import time
import urllib.parse

import numpy as np

import core
from harness.pages import PAGE_STATE, differences, expected_charts
from harness.support.dashboard import Dashboard
from harness.support.lab import ROOT, open_notebook
from harness.support.own_data import BAD_FILES
from widgets.model import Model
from widgets.settings import DEFAULTS, Settings, sanitize

GOOD = "height,weight,name\n" + "".join(f"{1.5 + i / 100},{50 + 0.9 * i + i % 5},p{i}\n" for i in range(40))


def page_settings(state: dict) -> Settings:
    """The settings the page's share link names, kind "own" kept (a link alone falls back)."""
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(state["share"]).query)
    return sanitize({key: values[-1] for key, values in query.items() if key in Settings._fields})[0]


def drawn(page, model: Model, done, timeout: float = 60) -> list[str]:
    """Poll until the page's run is one `done(settings)` accepts and every chart draws what `model`
    computes for it; what still differs after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        state = page.evaluate(PAGE_STATE)
        settings = page_settings(state)
        wrong = differences(state, expected_charts(model, settings)) if done(settings) else ["not moved"]
        if not wrong or time.monotonic() > deadline:
            return wrong
        time.sleep(0.5)


def notice(page) -> str:
    return page.locator(".scanlab-control-notice").inner_text()


def test_a_visitors_file_runs_and_a_bad_one_changes_nothing(browser, dashboard_url, tmp_path):
    dashboard = Dashboard(browser, dashboard_url)
    page = dashboard.page
    files = page.locator(".scanlab-upload input[type=file]")
    assert page.get_by_label("your data (CSV)").count() == 1  # the control has its name

    good = tmp_path / "mine.csv"
    good.write_text(GOOD)
    files.set_input_files(str(good))
    in_use = "() => document.body.innerText.includes('In use: mine.csv, 40 rows')"
    page.wait_for_function(in_use, timeout=60_000)
    model = Model()
    model.compute(DEFAULTS)  # the page's first run: the landscape's frame starts from it
    model.rows.use(core.parse_csv(GOOD.encode()))
    assert drawn(page, model, lambda s: s.kind == "own") == []
    assert "N lowered to 2" in notice(page)  # 40 rows: 2 batches of 16
    before = page.evaluate(PAGE_STATE)["charts"]

    bad = tmp_path / "bad.csv"
    bad.write_text("a;b\n1;2\n3;x\n")
    files.set_input_files(str(bad))
    page.wait_for_function("() => document.body.innerText.includes('bad.csv: Row 3')", timeout=60_000)
    assert "holds 'x', which is not a number. The data stay as they were." in notice(page)
    big = tmp_path / "big.csv"
    big.write_bytes(b"x,y\n" + b"1,2\n" * 1_500_000)  # 6 MB: the browser refuses it, unsent
    sent = len(dashboard.frames_sent)
    files.set_input_files(str(big))
    page.wait_for_function("() => document.body.innerText.includes('big.csv is 6.0 MB')", timeout=60_000)
    assert max(len(frame) for frame in dashboard.frames_sent[sent:]) < 10_000  # the file was not sent
    assert page.evaluate(PAGE_STATE)["charts"] == before
    assert "In use: mine.csv, 40 rows" in page.locator(".scanlab-controls").inner_text()

    # A move runs on the file's rows: lr typed into its readout.
    readout = (
        page.locator(".widget-slider")
        .filter(has=page.get_by_text("lr", exact=True))
        .locator(".widget-readout")
    )
    readout.fill("0.0001")
    readout.press("Enter")
    assert drawn(page, model, lambda s: s.kind == "own" and s.lr == 0.0001) == []
    weights = model.compute(page_settings(page.evaluate(PAGE_STATE))).histories["sum"].params["w"]
    assert np.all(np.isfinite(weights))
    assert dashboard.errors == [], dashboard.errors
    dashboard.close()


def test_each_bad_file_is_said_in_the_page_and_the_data_stay(browser, dashboard_url, tmp_path):
    """Every bad file of core's list, and a file past the row limit, chosen in the page one after the
    other: each gets its own sentence under the controls, and the charts keep the first file's run.
    A file with a byte-order mark and one with ";" and decimal commas are read."""
    dashboard = Dashboard(browser, dashboard_url)
    page = dashboard.page
    files = page.locator(".scanlab-upload input[type=file]")

    def choose(name: str, content: bytes) -> None:
        path = tmp_path / name
        path.write_bytes(content)
        files.set_input_files(str(path))

    choose("mine.csv", ("\ufeff" + GOOD).encode())  # Excel's UTF-8: a byte-order mark first
    page.wait_for_function("() => document.body.innerText.includes('In use: mine.csv, 40 rows, x = height')")
    model = Model()
    model.compute(DEFAULTS)
    model.rows.use(core.parse_csv(("\ufeff" + GOOD).encode()))
    assert drawn(page, model, lambda s: s.kind == "own") == []  # the map included
    before = page.evaluate(PAGE_STATE)["charts"]
    rows = b"x,y\n" + b"1,2\n" * (core.own_data.MAX_ROWS + 1)
    cases = [*((name, content, expected) for name, (content, expected) in BAD_FILES.items())]
    cases.append(("too many rows", rows, "more than 100,000 rows"))
    for i, (name, content, expected) in enumerate(cases):
        choose(f"bad{i}.csv", content)
        page.wait_for_function(f"() => document.body.innerText.includes('bad{i}.csv: ')", timeout=30_000)
        said = notice(page)
        assert expected.replace("\n", " ") in said and "The data stay as they were." in said, (name, said)
        beside = page.locator(".scanlab-refused").inner_text()  # under the file control too
        assert beside.startswith(f"⚠ bad{i}.csv: ") and expected.replace("\n", " ") in beside, beside
    assert page.evaluate(PAGE_STATE)["charts"] == before
    choose("european.csv", b"x;y\n1,5;2,5\n2,5;4,5\n3,5;6,5\n")
    page.wait_for_function("() => document.body.innerText.includes('In use: european.csv, 3 rows')")
    assert dashboard.errors == [], dashboard.errors
    dashboard.close()


def test_a_file_chosen_in_the_notebook_runs_there_too(browser, jupyter_lab, tmp_path):
    """app.ipynb in JupyterLab (the notebook use): the same file control takes a file, and the run
    follows it."""
    shutil.copy(ROOT / "app.ipynb", tmp_path / "app.ipynb")
    good = tmp_path / "mine.csv"
    good.write_text(GOOD)
    with jupyter_lab(tmp_path) as url:
        context, page, errors = open_notebook(browser, url, "app.ipynb")
        page.wait_for_function(
            "() => jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
            timeout=120_000,
        )
        page.evaluate("() => jupyterapp.commands.execute('notebook:run-all-cells')")
        files = page.locator(".scanlab-upload input[type=file]")
        files.wait_for(state="attached", timeout=180_000)
        files.set_input_files(str(good))
        # textContent: JupyterLab leaves the cells out of view unrendered, without innerText.
        loaded = "() => document.body.textContent.includes('In use: mine.csv, 40 rows')"
        page.wait_for_function(loaded, timeout=60_000)
        model = Model()
        model.rows.use(core.parse_csv(GOOD.encode()))
        settings, _ = model.rows.fit(DEFAULTS._replace(kind="own"))
        result = model.compute(settings)
        final = f"final w = {result.histories['sum'].params['w'][-1]:.6g}"
        page.wait_for_function(f"() => document.body.textContent.includes({final!r})", timeout=60_000)
        assert errors == [], errors
        context.close()
