import numpy as np
import pytest
from sklearn import datasets as skdatasets

from sklcalib.datasets import (
    DATASETS,
    TABULAR_DATASETS,
    list_datasets,
    load_dataset,
    split_and_scale,
)
from sklcalib.datasets._builtin import _flip_labels

PARTS = ("train", "val", "test")
# the real tabular sets one-hot encode categoricals: tests/test_datasets_tabular.py
SCALED = [name for name in DATASETS if name not in TABULAR_DATASETS]


@pytest.fixture(scope="module", params=SCALED)
def data(request):
    return load_dataset(request.param)


def test_list_datasets_matches_registry():
    assert list_datasets() == list(DATASETS)
    assert {
        "moons",
        "blobs",
        "classification",
        "digits",
        "breast_cancer",
        "wine",
    } <= set(list_datasets())


def test_bunch_layout_and_dtypes(data):
    n_features = data.X_train.shape[1]
    for part in PARTS:
        X, y = data[f"X_{part}"], data[f"y_{part}"]
        assert X.dtype == np.float32
        assert y.dtype == np.int64
        assert X.ndim == 2 and X.shape == (len(y), n_features)
        assert np.isfinite(X).all()
    assert len(data.feature_names) == n_features
    assert len(data.target_names) == data.n_classes
    assert isinstance(data.description, str) and data.description
    all_y = np.concatenate([data[f"y_{p}"] for p in PARTS])
    assert set(np.unique(all_y)) == set(range(data.n_classes))


def test_split_sizes_are_60_20_20(data):
    n = sum(len(data[f"y_{p}"]) for p in PARTS)
    assert abs(len(data.y_test) - 0.2 * n) <= 1
    assert abs(len(data.y_val) - 0.2 * n) <= 1


def test_splits_are_disjoint(data):
    # rows (rounded to float32 bytes) are unique across the three splits
    rows = {p: {r.tobytes() for r in data[f"X_{p}"]} for p in PARTS}
    assert not rows["train"] & rows["val"]
    assert not rows["train"] & rows["test"]
    assert not rows["val"] & rows["test"]


def test_splits_are_stratified(data):
    ref = np.bincount(data.y_train, minlength=data.n_classes) / len(data.y_train)
    for part in ("val", "test"):
        y = data[f"y_{part}"]
        freq = np.bincount(y, minlength=data.n_classes) / len(y)
        # stratification keeps each class within one sample of its share
        assert np.all(np.abs(freq - ref) <= 1.0 / len(y) + 1e-12)


def test_features_standardised_on_train_only(data):
    np.testing.assert_allclose(data.X_train.mean(axis=0), 0, atol=1e-4)
    std = data.X_train.std(axis=0)
    # constant columns (digits' blank pixels) stay at 0 after scaling
    np.testing.assert_allclose(std[std > 0], 1, atol=1e-3)
    # the test split is not re-centred on its own statistics
    assert not np.allclose(data.X_test.mean(axis=0), 0, atol=1e-4)


@pytest.mark.parametrize("name", SCALED)
def test_deterministic_and_seeded(name):
    a, b = load_dataset(name, random_state=0), load_dataset(name, random_state=0)
    c = load_dataset(name, random_state=1)
    for part in PARTS:
        np.testing.assert_array_equal(a[f"X_{part}"], b[f"X_{part}"])
        np.testing.assert_array_equal(a[f"y_{part}"], b[f"y_{part}"])
    assert not np.array_equal(a.X_test, c.X_test)


def test_bundled_data_is_the_original_up_to_scaling():
    raw = skdatasets.load_wine()
    d = load_dataset("wine")
    assert sum(len(d[f"y_{p}"]) for p in PARTS) == len(raw.target)
    np.testing.assert_array_equal(
        np.sort(np.concatenate([d[f"y_{p}"] for p in PARTS])), np.sort(raw.target)
    )
    assert d.feature_names == list(raw.feature_names)


def test_split_and_scale_small_input():
    X = np.arange(200, dtype=float).reshape(100, 2)
    y = np.repeat([0, 1], 50)
    s = split_and_scale(X, y, random_state=0)
    assert [len(s[f"y_{p}"]) for p in PARTS] == [60, 20, 20]
    assert [int(s[f"y_{p}"].sum()) for p in PARTS] == [30, 10, 10]
    # the three splits together hold every original row exactly once
    back = np.concatenate([s[f"X_{p}"] for p in PARTS])[:, 0]
    assert len(np.unique(back)) == 100


def test_flip_labels_flips_the_fraction_to_other_classes():
    rng = np.random.RandomState(0)
    y = np.repeat(np.arange(5), 200)
    flipped = _flip_labels(y, 0.1, 5, rng)
    changed = flipped != y
    assert changed.sum() == 100  # exactly 10 %, every one to another class
    assert set(np.unique(flipped)) == set(range(5))


def test_blobs_carry_label_noise():
    # 10 % flipped labels: about one label in ten disagrees with the
    # nearest-centroid rule, whose errors on clean blobs would be rare
    d = load_dataset("blobs")
    X = np.concatenate([d[f"X_{p}"] for p in PARTS])
    y = np.concatenate([d[f"y_{p}"] for p in PARTS])
    centroids = np.stack([X[y == k].mean(axis=0) for k in range(d.n_classes)])
    pred = np.argmin(((X[:, None] - centroids) ** 2).sum(-1), axis=1)
    assert 0.08 < (pred != y).mean() < 0.2


@pytest.mark.parametrize("bad", ["mnist", "", None, 3])
def test_unknown_name_lists_valid_ones(bad):
    with pytest.raises(ValueError, match=r"name=.*valid names are moons, blobs"):
        load_dataset(bad)
