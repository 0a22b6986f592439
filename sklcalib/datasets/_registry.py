"""Every dataset by name: ``DATASETS``, ``list_datasets`` and ``load_dataset``."""

from sklcalib.datasets import _builtin, _tabular
from sklcalib.datasets._splits import check_random_state_int

# the synthetic presets and scikit-learn's bundled sets, in the order listed;
# the real tabular sets follow in the order of their specifications
_BUILTIN = (
    "moons",
    "blobs",
    "classification",
    "classification_hard",
    "digits",
    "breast_cancer",
    "wine",
)

#: name -> loader(random_state) for every dataset :func:`load_dataset` knows.
DATASETS = {
    **{name: getattr(_builtin, f"load_{name}") for name in _BUILTIN},
    **{name: getattr(_tabular, f"load_{name}") for name in _tabular.TABULAR_DATASETS},
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
