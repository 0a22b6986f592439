"""scikit-learn scorers for the calibration metrics.

``sklearn.metrics.make_scorer(..., response_method="predict_proba")`` does not
tell the metric which class each column is: it passes ``predict_proba(X)``
(only the positive column for a binary classifier) and ``y_true``. On a
cross-validation fold whose test split lacks a class, the labels inferred from
``y_true`` would no longer match the columns. The scorers here therefore pass
``labels=estimator.classes_``; otherwise they are the ``_Scorer`` objects that
``make_scorer`` builds (sign, response caching in multi-metric
``cross_validate``, sample_weight routing all unchanged).
"""

import copy

from sklearn.metrics import get_scorer as _sklearn_get_scorer
from sklearn.metrics import get_scorer_names as _sklearn_get_scorer_names
from sklearn.metrics._scorer import _Scorer

from ._registry import METRICS


class _CalibrationScorer(_Scorer):
    """A ``make_scorer`` scorer that passes ``labels=estimator.classes_``.

    Subclassing sklearn's private ``_Scorer`` (stable since scikit-learn 1.4)
    keeps every behaviour of ``make_scorer``; the only change is the labels.
    There is no public way: ``make_scorer`` fixes its keyword arguments when
    it is built, while the labels are those of each fitted estimator.
    tests/test_private_apis.py fails loudly if ``_Scorer`` changes.
    """

    def _score(self, method_caller, estimator, X, y_true, **kwargs):
        classes = getattr(estimator, "classes_", None)
        if classes is not None and "labels" not in self._kwargs:
            kwargs = {**kwargs, "labels": classes}
        return super()._score(method_caller, estimator, X, y_true, **kwargs)


def _calibration_scorer(metric):
    # what make_scorer(metric, greater_is_better=False,
    # response_method="predict_proba") builds, with the labels added
    return _CalibrationScorer(
        score_func=metric, sign=-1, kwargs={}, response_method="predict_proba"
    )


#: The scorers by name: ``"neg_<metric>"`` for every calibration error of the
#: metric registry (``nll`` and ``brier`` have scikit-learn's own scorers,
#: ``"neg_log_loss"`` and ``"neg_brier_score"``); the names
#: :func:`get_scorer` accepts besides scikit-learn's.
CALIBRATION_SCORERS = {
    f"neg_{name}": _calibration_scorer(metric)
    for name, metric in METRICS.items()
    if name not in ("nll", "brier")
}

#: Scorer of :func:`expected_calibration_error` on ``predict_proba``, negated so that
#: greater is better; ``get_scorer("neg_ece")`` returns a copy.
ece_scorer = CALIBRATION_SCORERS["neg_ece"]
#: Scorer of :func:`adaptive_calibration_error` on ``predict_proba``, negated so that
#: greater is better; ``get_scorer("neg_adaptive_ece")`` returns a copy.
adaptive_ece_scorer = CALIBRATION_SCORERS["neg_adaptive_ece"]
#: Scorer of :func:`classwise_calibration_error` on ``predict_proba``, negated so that
#: greater is better; ``get_scorer("neg_classwise_ece")`` returns a copy.
classwise_ece_scorer = CALIBRATION_SCORERS["neg_classwise_ece"]
#: Scorer of :func:`maximum_calibration_error` on ``predict_proba``, negated so that
#: greater is better; ``get_scorer("neg_mce")`` returns a copy.
mce_scorer = CALIBRATION_SCORERS["neg_mce"]
#: Scorer of :func:`smooth_calibration_error` on ``predict_proba``, negated so that
#: greater is better; ``get_scorer("neg_smooth_ece")`` returns a copy.
smooth_ece_scorer = CALIBRATION_SCORERS["neg_smooth_ece"]
#: Scorer of :func:`debiased_calibration_error` on ``predict_proba``, negated so that
#: greater is better; ``get_scorer("neg_debiased_ece")`` returns a copy.
debiased_ece_scorer = CALIBRATION_SCORERS["neg_debiased_ece"]
#: Scorer of :func:`ece_sweep` on ``predict_proba``, negated so that
#: greater is better; ``get_scorer("neg_ece_sweep")`` returns a copy.
ece_sweep_scorer = CALIBRATION_SCORERS["neg_ece_sweep"]
#: Scorer of :func:`kernel_calibration_error` on ``predict_proba``, negated so that
#: greater is better; ``get_scorer("neg_kernel_calibration_error")`` returns a copy.
kernel_calibration_error_scorer = CALIBRATION_SCORERS["neg_kernel_calibration_error"]
#: Scorer of :func:`cumulative_calibration_error` (Kuiper) on ``predict_proba``,
#: negated so that greater is better; ``get_scorer("neg_cumulative_kuiper")``
#: returns a copy.
cumulative_kuiper_scorer = CALIBRATION_SCORERS["neg_cumulative_kuiper"]
#: Scorer of :func:`cumulative_calibration_error` (Kolmogorov–Smirnov) on
#: ``predict_proba``, negated so that greater is better;
#: ``get_scorer("neg_cumulative_ks")`` returns a copy.
cumulative_ks_scorer = CALIBRATION_SCORERS["neg_cumulative_ks"]


def get_scorer_names():
    """Return the names :func:`get_scorer` accepts, calibration scorers included.

    The calibration scorers' names and scikit-learn's.

    Returns
    -------
    names : list of str
        Sorted, as :func:`sklearn.metrics.get_scorer_names` returns them.

    Examples
    --------
    >>> from sklcalib.metrics import get_scorer_names
    >>> "neg_ece" in get_scorer_names() and "accuracy" in get_scorer_names()
    True
    """
    return sorted({*CALIBRATION_SCORERS, *_sklearn_get_scorer_names()})


def get_scorer(scoring):
    """Return a scorer from its name, calibration names included.

    Parameters
    ----------
    scoring : str, callable or None
        One of the keys of :data:`CALIBRATION_SCORERS` (``"neg_ece"``,
        ``"neg_adaptive_ece"``, ``"neg_classwise_ece"``, ``"neg_mce"``,
        ``"neg_smooth_ece"``, ``"neg_debiased_ece"``, ``"neg_ece_sweep"``,
        ``"neg_kernel_calibration_error"``, ``"neg_cumulative_kuiper"``,
        ``"neg_cumulative_ks"``), any name :func:`sklearn.metrics.get_scorer`
        knows, a callable (returned as is) or None.

    Returns
    -------
    scorer : callable
        A copy of the scorer, ``scorer(estimator, X, y)``; greater is better
        (calibration errors are negated).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklcalib.metrics import get_scorer
    >>> X, y = load_iris(return_X_y=True)
    >>> model = LogisticRegression(max_iter=1000).fit(X, y)
    >>> score = get_scorer("neg_ece")(model, X, y)
    >>> -1.0 <= score <= 0.0
    True
    >>> get_scorer("accuracy")(model, X, y) > 0.9
    True
    """
    if isinstance(scoring, str) and scoring in CALIBRATION_SCORERS:
        return copy.deepcopy(CALIBRATION_SCORERS[scoring])
    return _sklearn_get_scorer(scoring)
