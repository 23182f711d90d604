"""Data of rows in the explorer, without a browser: the example data set and a visitor's CSV file run
as core cuts them; a bad file gets its sentence on the page and changes nothing; N x B beyond the rows
is lowered (or rows used again); the map runs each batch size on its own cut; a link cannot carry a
file; moves on data of rows compile nothing."""

import numpy as np
import pytest

import core
from harness.support.own_data import BAD_FILES
from widgets import Explorer
from widgets.model import MAP_BATCH_SIZES, MAP_LRS, Model
from widgets.own_data import UPLOAD_LABEL
from widgets.settings import DEFAULTS, OWN_DATA_LINK, Settings, from_query, presentation_from_query

GOOD = b"height,weight,name\n" + b"".join(
    f"{1.5 + i / 100},{50 + 0.9 * i + i % 5},p{i}\n".encode() for i in range(40)
)


def send_file(explorer: Explorer, name: str, content: bytes) -> None:
    """What the page's file control sends for a chosen file (widgets/upload.js)."""
    message = {"kind": "file", "name": name, "size": len(content)}
    explorer.own_data._received(explorer.own_data.upload, message, [memoryview(content)])


@pytest.fixture
def explorer():
    return Explorer(background=False)


def _weights(explorer):
    return {loss: h.params["w"].copy() for loss, h in explorer.result.histories.items()}


def test_the_example_data_run_as_core_cuts_them_and_n_is_lowered_to_fit():
    explorer = Explorer(Settings(kind="engel", N=100, B=16, lr=0.02), background=False)
    s = explorer.settings
    assert (s.N, s.B) == (235 // 16, 16) and explorer.inputs["N"].value == 14
    assert "N lowered to 14" in explorer.notice.value and "235" in explorer.notice.value
    table = core.load_example()
    x, y = core.batches_from_rows(table.x, table.y, 14, 16, seed=0)
    expected = core.training_history(0.0, 0.02, x, y)
    np.testing.assert_array_equal(explorer.result.histories["sum"].params["w"], expected.weights)
    # The generated data's controls are hidden, the two flags and the data's line shown.
    shown = {
        name: explorer.inputs[name].layout.display for name in ("true_w", "noise", "standardize", "replace")
    }
    assert shown == {"true_w": "none", "noise": "none", "standardize": None, "replace": None}
    assert "235 households" in explorer.own_data.line.value


def test_an_n_lowered_for_the_rows_comes_back_when_the_data_allow_it(explorer):
    explorer.inputs["kind"].value = "engel"
    assert (explorer.settings.N, explorer.settings.B) == (
        14,
        16,
    ) and "N lowered to 14" in explorer.notice.value
    explorer.inputs["kind"].value = "gaussian"
    assert (explorer.settings.N, explorer.settings.B) == (DEFAULTS.N, DEFAULTS.B)
    assert explorer.inputs["N"].value == DEFAULTS.N and f"N={DEFAULTS.N}&" in explorer.share.value
    assert f"N × B back to {DEFAULTS.N} × {DEFAULTS.B}, as you chose them" in explorer.notice.value
    # Under the rows, "replace" gives the chosen N back too; an N moved since is the new choice.
    explorer.inputs["kind"].value = "engel"
    explorer.inputs["replace"].value = True
    assert explorer.settings.N == DEFAULTS.N
    explorer.inputs["replace"].value = False
    explorer.inputs["N"].value = 10
    explorer.inputs["kind"].value = "gaussian"
    assert explorer.settings.N == 10 and "back to" not in explorer.notice.value


def test_the_example_data_fit_the_float64_least_squares_line():
    explorer = Explorer(Settings(kind="engel", model="w,b", replace=True, N=235, B=1), background=False)
    table = core.load_example()
    # The run's data are float32 (as the engine's); their float64 least squares is the result's w*, b*,
    # and within float32's rounding of the file's own.
    for x, y, rel in [
        (table.x, table.y, 1e-6),
        (table.x.astype(np.float32), table.y.astype(np.float32), 1e-9),
    ]:
        design = np.stack([x, np.ones_like(x)], axis=1).astype(np.float64)
        (w, b), *_ = np.linalg.lstsq(design, y.astype(np.float64), rcond=None)
        # Every row once (N x B = 235 x 1, one pass): the run's optimum is the whole data set's.
        assert explorer.result.w_star == pytest.approx(w, rel=rel)
        assert explorer.result.b_star == pytest.approx(b, rel=rel)
    assert explorer.result.w_star == pytest.approx(0.485, abs=5e-4)  # core/datasets/README.md's line


def test_replace_uses_rows_again_and_standardize_centres_x(explorer):
    explorer.apply(DEFAULTS._replace(kind="engel", N=100, B=16, replace=True, standardize=True))
    assert (explorer.settings.N, explorer.settings.B) == (100, 16) and "lowered" not in explorer.notice.value
    table = core.load_example()
    x, y = core.batches_from_rows(table.x, table.y, 100, 16, seed=0, replace=True, standardize=True)
    np.testing.assert_array_equal(
        explorer.result.histories["mean"].params["w"],
        core.training_history(0.0, 0.01, x, y, loss="mean").weights,
    )


def test_a_visitors_file_runs_and_its_columns_can_be_chosen(explorer):
    send_file(explorer, "mine.csv", GOOD)
    s = explorer.settings
    assert s.kind == "own" and explorer.inputs["kind"].value == "own"
    assert "In use: mine.csv, 40 rows, x = height, y = weight" in explorer.own_data.line.value
    assert explorer.own_data.upload.chosen == "mine.csv in use"  # beside the control, not "No file chosen"
    assert "“name”" in explorer.own_data.line.value  # the text column left out, and said
    table = core.parse_csv(GOOD)
    x, y = core.batches_from_rows(table.x, table.y, s.N, s.B, seed=s.seed)
    np.testing.assert_array_equal(
        explorer.result.histories["sum"].params["w"], core.training_history(s.w0, s.lr, x, y).weights
    )
    # Two columns of numbers: nothing to choose. Three: the menus, and another choice reruns.
    assert explorer.own_data.columns.layout.display == "none"
    send_file(explorer, "three.csv", b"a,b,c\n1,2,3\n2,4,7\n3,6,8\n4,8,1\n")
    assert explorer.own_data.columns.layout.display is None
    assert list(explorer.own_data.x.options) == ["a", "b", "c"]
    explorer.own_data.y.value = "c"
    assert explorer.model.rows.table("own").y_name == "c"
    assert "x = a, y = c" in explorer.own_data.line.value
    explorer.own_data.x.value = "c"  # x and y one column: said, and the menus put back
    assert "three.csv: x and y are both column &#x27;c&#x27;" in explorer.control_notice.value
    assert (explorer.own_data.x.value, explorer.model.rows.table("own").x_name) == ("a", "a")


@pytest.mark.parametrize("name", BAD_FILES)
def test_a_bad_file_is_said_on_the_page_and_changes_nothing(explorer, name):
    send_file(explorer, "mine.csv", GOOD)
    before, result = explorer.settings, _weights(explorer)
    content, expected = BAD_FILES[name]
    send_file(explorer, "bad.csv", content)
    notice = explorer.control_notice.value
    assert "bad.csv" in notice and "The data stay as they were" in notice
    assert core.own_data.DataError.__name__ not in notice  # a sentence, not a traceback
    assert explorer.settings == before
    for loss, weights in result.items():
        np.testing.assert_array_equal(explorer.result.histories[loss].params["w"], weights)
    assert "mine.csv" in explorer.own_data.line.value


def test_a_refused_file_is_said_beside_the_control_and_keeps_the_runs_notices():
    explorer = Explorer(Settings(kind="engel", N=100, B=16), background=False)
    lowered = "N lowered to 14"
    assert lowered in explorer.notice.value and "In use: Household income" in explorer.own_data.line.value
    send_file(explorer, "bad.csv", b"%PDF-1.7\n")
    for words in (explorer.notice.value, explorer.control_notice.value):
        assert lowered in words and "bad.csv: " in words, words  # the run's notice stays
    line = explorer.own_data.line.value
    assert '<span class="scanlab-refused">&#9888; bad.csv: ' in line and "In use: Household income" in line
    send_file(explorer, "worse.csv", b"PK\x03\x04")  # the next refusal replaces the last one
    assert "worse.csv" in explorer.notice.value and "bad.csv" not in explorer.notice.value
    assert lowered in explorer.notice.value and "bad.csv" not in explorer.own_data.line.value
    explorer.inputs["lr"].value = 0.002  # a move: its own notices, none
    assert explorer.notice.value == "" and "worse.csv" in explorer.own_data.line.value
    explorer.inputs["kind"].value = "gaussian"  # other data: the refusal was about the last
    assert "worse.csv" not in explorer.own_data.line.value
    assert explorer.own_data.upload.chosen == "no file in use"
    send_file(explorer, "mine.csv", GOOD)
    send_file(explorer, "bad.csv", b"%PDF-1.7\n")
    send_file(explorer, "mine2.csv", GOOD)  # a good file: its line alone
    assert explorer.own_data.line.value.startswith("In use: mine2.csv, 40 rows")


def test_a_file_over_the_size_limit_is_refused_whether_the_browser_sent_it_or_not(explorer):
    before = explorer.settings
    explorer.own_data._received(None, {"kind": "too_big", "name": "big.csv", "size": 9_000_000}, [])
    assert "big.csv is 9.0 MB; a file may be at most 5 MB (5,000,000 bytes)" in explorer.control_notice.value
    content = b"x,y\n" + b"1,2\n" * (core.MAX_BYTES // 4 + 1)  # past the limit, sent anyway
    send_file(explorer, "sent.csv", content)
    assert f"sent.csv is {len(content):,} bytes; a file may be at most 5 MB" in explorer.control_notice.value
    assert explorer.settings == before


def test_messages_the_page_never_sends_are_ignored(explorer):
    before = explorer.settings
    for message, buffers in [
        ("file", []),
        ({"kind": "file"}, []),
        ({"kind": "file", "name": "a.csv"}, [b"x,y\n1,2\n", b"more"]),
        ({"kind": "other"}, [b"x,y\n1,2\n3,4\n"]),
        ([], []),
    ]:
        explorer.own_data._received(None, message, buffers)
    assert explorer.settings == before and explorer.control_notice.value == ""


def test_choosing_your_csv_before_any_file_keeps_the_data_and_says_why(explorer):
    assert "at most 5 MB and 100,000 rows" in explorer.own_data.line.value  # what a file may be
    explorer.inputs["kind"].value = "engel"
    explorer.inputs["kind"].value = "own"
    assert explorer.settings.kind == "engel" and explorer.inputs["kind"].value == "engel"
    assert "There is no CSV file of yours yet" in explorer.control_notice.value
    assert UPLOAD_LABEL.split(" (")[0] in explorer.control_notice.value


def test_a_link_made_with_own_data_says_so_and_uses_the_default_data():
    settings, notices = from_query("lr=0.05&kind=own&N=20")
    assert settings.kind == DEFAULTS.kind and settings.lr == 0.05 and settings.N == 20
    assert notices == [OWN_DATA_LINK]
    explorer = Explorer(background=False)
    send_file(explorer, "mine.csv", GOOD)
    assert "kind=own" in explorer.share.value  # the link says what it cannot carry


def test_the_map_runs_each_batch_size_on_its_own_cut():
    model = Model()
    s = Settings(kind="engel", N=10, B=16, w0=0.5)
    found = model.stability(s)
    table = core.load_example()
    for k, b in enumerate(MAP_BATCH_SIZES):
        b = int(b)
        if 10 * b > 235:  # the rows cannot fill it: a blank row
            assert np.isnan(found.log10_error["sum"][k]).all() and not found.diverged["sum"][k].any()
            continue
        batches = model.engine.pad(*core.batches_from_rows(table.x, table.y, 10, b, seed=0))
        one = core.stability_map(batches, MAP_LRS, [b], w0=0.5, n=10)
        for loss in ("sum", "mean"):
            np.testing.assert_array_equal(found.log10_error[loss][k], one.log10_error[loss][0])
            np.testing.assert_array_equal(found.diverged[loss][k], one.diverged[loss][0])
    assert np.isnan(found.log10_error["sum"]).all(axis=1).sum() == sum(
        10 * int(b) > 235 for b in MAP_BATCH_SIZES
    )
    with_replace = model.stability(s._replace(replace=True))
    assert not np.isnan(with_replace.critical_lr["sum"]).any()


def test_moves_on_data_of_rows_compile_nothing(count_compiles):
    explorer = Explorer(Settings(kind="engel", replace=True), background=False)
    rng = np.random.default_rng(7)
    for model in ("w", "w,b"):  # each model's runs and maps once
        explorer.apply(explorer.settings._replace(model=model))
        explorer.apply(explorer.settings._replace(model=model, map="momentum"))
        explorer.apply(explorer.settings._replace(model=model, map="B"))
    with count_compiles() as compiles:
        for _ in range(12):
            explorer.apply(
                explorer.settings._replace(
                    lr=float(rng.choice([0.001, 0.01, 0.05])),
                    N=int(rng.integers(1, 300)),
                    B=int(rng.integers(1, 64)),
                    w0=float(rng.uniform(-2, 2)),
                    seed=int(rng.integers(0, 5)),
                    standardize=bool(rng.integers(0, 2)),
                    model=str(rng.choice(["w", "w,b"])),
                )
            )
    assert compiles == []


def test_the_script_and_the_csv_export_carry_the_rows(explorer):
    send_file(explorer, "mine.csv", GOOD)
    script = explorer.script
    assert "'height'" in script and "X = [" in script and "TRUE_W" not in script
    explorer._export("csv")
    assert 'download="scanlab_data.csv"' in explorer.export_links.value
    explorer.apply(DEFAULTS)  # generated data: the script draws them, and no data file is offered
    assert "X = [" not in explorer.script
    explorer._export("csv")
    assert "scanlab_data.csv" not in explorer.export_links.value


def test_a_file_that_comes_while_the_map_is_computed_does_not_get_its_map(monkeypatch):
    """The map runs on a worker thread while the page may take another file: the map it computes is
    kept under the data it was computed from, and the new file's settings do not find it."""
    model = Model()
    model.rows.use(core.parse_csv(GOOD))
    s = Settings(kind="own", N=2, B=16)
    cut = model.rows.cut

    def cut_then_a_new_file(*args, **kwargs):
        monkeypatch.setattr(model.rows, "cut", cut)
        model.rows.use(core.parse_csv(b"x,y\n1,2\n2,4\n3,7\n4,8\n"))  # mid-computation
        return cut(*args, **kwargs)

    monkeypatch.setattr(model.rows, "cut", cut_then_a_new_file)
    first = model.stability(s)
    assert model.kept_stability(s) is None  # the new file's: computed anew when asked
    again = model.stability(s)
    assert again is not first and np.isnan(again.log10_error["sum"]).all(axis=1).sum() > 0


def test_a_diverging_run_of_rows_offers_standardize_when_it_would_converge():
    explorer = Explorer(Settings(kind="engel", lr=0.1, N=10, B=16), background=False)
    result = explorer.result
    assert result.regimes["sum"] == "diverging" and explorer.standardize_button.layout.display is None
    table = core.load_example()
    x, _ = core.batches_from_rows(table.x, table.y, 10, 16, seed=0, standardize=True)
    rescue = core.critical_lr(x)
    assert result.standardized_lr["sum"] == pytest.approx(rescue) and rescue > 0.1
    assert (
        f"standardised (“standardize”: x rescaled to mean 0 and spread 1) it allows up to {rescue:.3g}"
        in (explorer.status.value)
    )
    explorer.standardize_button.click()
    assert explorer.settings.standardize and explorer.result.regimes["sum"] != "diverging"
    assert explorer.standardize_button.layout.display == "none" and "standardise" not in explorer.status.value
    # Not offered where it would not rescue the lr, nor on a page that hides the control.
    explorer.apply(Settings(kind="engel", lr=10.0, N=10, B=16))
    assert explorer.result.standardized_lr is None and explorer.standardize_button.layout.display == "none"
    hidden = Explorer(
        Settings(kind="engel", lr=0.1, N=10, B=16),
        background=False,
        presentation=presentation_from_query("hide=standardize")[0],
    )
    assert hidden.result.standardized_lr is not None and hidden.standardize_button.layout.display == "none"
    # The sentence still says what standardising would allow, without naming the hidden control.
    assert "“standardize”" not in hidden.status.value
    assert (
        f"standardised (x rescaled to mean 0 and spread 1) it allows up to {rescue:.3g}"
        in hidden.status.value
    )
