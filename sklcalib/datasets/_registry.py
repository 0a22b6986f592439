"""Every dataset by name: ``DATASETS``, ``list_datasets`` and ``load_dataset``."""

from sklcalib.datasets._builtin import (
    load_blobs,
    load_breast_cancer,
    load_classification,
    load_classification_hard,
    load_digits,
    load_moons,
    load_wine,
)
from sklcalib.datasets._splits import check_random_state_int
from sklcalib.datasets._tabular import (
    load_caravan,
    load_cells,
    load_credit,
    load_default,
    load_diamonds,
    load_hpc,
    load_lending_club,
    load_mlc_churn,
    load_titanic,
    load_wa_churn,
)

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
    return DATASETS[name](random_state=check_random_state_int(random_state))
