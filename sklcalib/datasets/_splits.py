"""The stratified 60/20/20 train / validation / test split every loader uses,
the standardisation fitted on the training split, and the seed check."""

import numbers

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.utils import Bunch

from sklcalib._utils._docstrings import fill_doc

_VAL_SIZE = 0.2
_TEST_SIZE = 0.2


def check_random_state_int(random_state):
    """An int seed in ``[0, 2**32)``, or ValueError naming ``random_state``.

    Only integers: a split that must be reproducible and cacheable cannot be
    keyed on a ``RandomState`` instance, whose state changes as it is used.
    """
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
        raise ValueError(
            f"random_state must be an int, got {type(random_state).__name__} "
            f"{random_state!r}."
        )
    if not 0 <= int(random_state) < 2**32:
        raise ValueError(f"random_state must be in [0, 2**32), got {random_state}.")
    return int(random_state)


def split_indices(y, random_state):
    """Row indices of the stratified 60/20/20 train / validation / test split."""
    n = len(y)
    index = np.arange(n)
    rest, test = train_test_split(
        index, test_size=round(_TEST_SIZE * n), stratify=y, random_state=random_state
    )
    train, val = train_test_split(
        rest,
        test_size=round(_VAL_SIZE * n),
        stratify=y[rest],
        random_state=random_state,
    )
    return train, val, test


@fill_doc
def split_and_scale(X, y, *, random_state=0):
    """Split into stratified train / validation / test and standardise.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features.
    y : array-like of shape (n_samples,)
        Integer class labels.
    random_state : int, default=0
        Seed of the split.

    Returns
    -------
    splits : dict
        ``X_train, y_train, X_val, y_val, X_test, y_test``; features are
        ``float32`` standardised with statistics of the training split only,
        labels ``int64``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.datasets import split_and_scale
    >>> X = np.arange(200, dtype=float).reshape(100, 2)
    >>> y = np.repeat([0, 1], 50)
    >>> s = split_and_scale(X, y)
    >>> s["X_train"].shape, s["X_val"].shape, s["X_test"].shape
    ((60, 2), (20, 2), (20, 2))
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    train, val, test = split_indices(y, random_state)
    X_train, X_val, X_test = X[train], X[val], X[test]
    y_train, y_val, y_test = y[train], y[val], y[test]
    # Fit on train only: the validation and test splits stand for unseen data.
    scaler = StandardScaler().fit(X_train)
    out = {}
    for part, (Xp, yp) in {
        "train": (X_train, y_train),
        "val": (X_val, y_val),
        "test": (X_test, y_test),
    }.items():
        out[f"X_{part}"] = scaler.transform(Xp).astype(np.float32)
        out[f"y_{part}"] = yp.astype(np.int64)
    return out


def bunch(
    name,
    X,
    y,
    *,
    random_state,
    n_classes,
    description,
    feature_names=None,
    target_names=None,
):
    if feature_names is None:
        feature_names = [f"x{i}" for i in range(X.shape[1])]
    if target_names is None:
        target_names = [str(k) for k in range(n_classes)]
    return Bunch(
        **split_and_scale(X, y, random_state=random_state),
        name=name,
        n_classes=int(n_classes),
        feature_names=list(feature_names),
        target_names=list(target_names),
        description=description,
    )
