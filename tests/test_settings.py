"""URL state and validation: every value a visitor can send is parsed, clamped or refused, and said."""

import math

import pytest

import core.model
from widgets.model import params
from widgets.settings import (
    CHOICES,
    DEFAULTS,
    LEAF_FIELDS,
    PRESETS,
    RANGES,
    Settings,
    from_query,
    leaves,
    reads,
    sanitize,
    to_query,
)


@pytest.mark.parametrize(
    ("query", "field", "expected"),
    [
        ("lr=abc", "lr", DEFAULTS.lr),
        ("lr=nan", "lr", DEFAULTS.lr),
        ("lr=inf", "lr", RANGES["lr"][1]),
        ("lr=1e-9", "lr", RANGES["lr"][0]),
        ("N=-5", "N", 1),
        ("N=1e9", "N", 1000),
        ("N=2.5", "N", 2),
        ("B=", "B", DEFAULTS.B),
        ("B=99999999999999999999999", "B", 512),
        ("loss=<script>alert(1)</script>", "loss", DEFAULTS.loss),
        ("kind=uniform", "kind", DEFAULTS.kind),
        ("seed=-1", "seed", 0),
        ("noise=%F0%9F%98%80", "noise", DEFAULTS.noise),
        ("optimizer=rmsprop", "optimizer", DEFAULTS.optimizer),
        ("optimizer=ADAM", "optimizer", DEFAULTS.optimizer),
        ("momentum=1", "momentum", RANGES["momentum"][1]),
        ("momentum=-0.5", "momentum", 0.0),
        ("momentum=x", "momentum", DEFAULTS.momentum),
        ("schedule=linear", "schedule", DEFAULTS.schedule),
        ("model=w%2Cb%2Cc", "model", DEFAULTS.model),
        ("model=b", "model", DEFAULTS.model),
        ("b0=nan", "b0", DEFAULTS.b0),
        ("b0=-1e6", "b0", RANGES["b0"][0]),
        ("true_b=6", "true_b", RANGES["true_b"][1]),
        ("x_mean=inf", "x_mean", RANGES["x_mean"][1]),
        ("x_mean=three", "x_mean", DEFAULTS.x_mean),
    ],
)
def test_bad_url_values_get_a_valid_value_and_a_notice(query, field, expected):
    settings, notices = from_query(query)
    assert getattr(settings, field) == expected
    assert len(notices) == 1 and field in notices[0]
    assert settings._replace(**{field: getattr(DEFAULTS, field)}) == DEFAULTS


def test_good_url_values_are_taken():
    settings, notices = from_query("lr=0.05&N=50&B=8&loss=both&w0=-1.5&kind=ones&seed=7")
    assert notices == []
    assert settings == DEFAULTS._replace(lr=0.05, N=50, B=8, loss="both", w0=-1.5, kind="ones", seed=7)


def test_the_optimizer_keys_round_trip_and_are_left_out_at_their_defaults():
    settings, notices = from_query("optimizer=nesterov&momentum=0.5&schedule=warmup")
    assert notices == []
    assert settings == DEFAULTS._replace(optimizer="nesterov", momentum=0.5, schedule="warmup")
    assert "optimizer=nesterov&momentum=0.5&schedule=warmup" in to_query(settings)
    assert from_query(to_query(settings)) == (settings, [])
    assert not any(key in to_query(DEFAULTS) for key in ("optimizer", "momentum", "schedule"))


def test_preset_then_overrides_in_any_order():
    for query in ("preset=diverging&N=30", "N=30&preset=diverging"):
        settings, notices = from_query(query)
        assert notices == []
        assert settings == PRESETS["diverging"][1]._replace(N=30)


def test_unknown_repeated_and_long_parameters_are_noticed_not_echoed_whole():
    long_value = "x" * 5000
    settings, notices = from_query(f"foo=1&lr=0.1&lr=0.2&preset={long_value}")
    assert settings.lr == 0.2
    assert len(notices) == 3
    assert all(len(n) < 200 for n in notices)


def test_too_many_parameters():
    settings, notices = from_query("&".join(f"k{i}=1" for i in range(500)))
    assert settings == DEFAULTS and notices


def test_share_link_round_trips_every_preset():
    for _, settings in PRESETS.values():
        query = to_query(settings)
        assert from_query(query) == (settings, [])
        assert query.startswith(f"lr={settings.lr:.6g}&N={settings.N}&B={settings.B}&loss={settings.loss}")


def test_sanitize_wrong_types_from_the_widget_protocol():
    settings, notices = sanitize({"lr": float("nan"), "N": "ten", "B": [3], "loss": 3, "w0": math.inf})
    assert settings == DEFAULTS._replace(w0=RANGES["w0"][1])
    assert len(notices) == 5


def test_presets_are_valid_settings():
    for _, settings in PRESETS.values():
        assert isinstance(settings, Settings)
        assert sanitize(settings._asdict()) == (settings, [])


def test_a_w_b_link_round_trips_and_the_w_model_keeps_its_links():
    settings = PRESETS["narrow-valley"][1]
    query = to_query(settings)
    assert "model=w,b" in query and "x_mean=3" in query and "b0=6" in query
    assert from_query(query) == (settings, [])
    # A link of the lesson's w names none of the w, b model's fields: yesterday's links still read.
    assert "model" not in to_query(DEFAULTS) and from_query("lr=0.1&N=5&B=2&loss=sum")[0].model == "w"


@pytest.mark.parametrize("model", CHOICES["model"])
def test_each_model_is_its_leaves_and_reads_only_their_fields(model):
    settings = DEFAULTS._replace(model=model)
    assert leaves(settings) == core.model.leaves(params(settings)) == tuple(model.split(","))
    owned = {name: leaf for leaf, fields in LEAF_FIELDS.items() for name in fields}
    assert set(owned) == {"b0", "true_b", "x_mean"}
    for name in Settings._fields:
        assert reads(settings, name) == (name not in owned or owned[name] in leaves(settings)), name
