"""Input checks and helpers shared by every post-hoc calibrator.

A calibrator is a scikit-learn classifier whose "features" are the scores of
another classifier: ``fit(scores, y)``, ``predict_proba(scores)``,
``predict(scores)``. Its columns are per-class scores, so their number must
match the number of classes in ``y`` (or be one positive-class column for a
binary problem).
"""

import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._param_validation import Interval, validate_params
from sklcalib._utils._scores import (  # noqa: F401 (re-exported to calibrators)
    as_2d,
    binary_logits,
)
from sklcalib._utils._scores import softmax as softmax_rows  # noqa: F401
from sklcalib._utils._validation import (
    MAX_N_BINS,
    _outside_stacklevel,
    any_dask,
    as_numpy,
    check_prob_values,
    check_sample_weight,
    is_dask_array,
)

LOGITS = "logits"
PROBABILITIES = "probabilities"

#: the declared constraints shared by many calibrators' parameters
FINITE = Interval(Real, -np.inf, np.inf, closed="neither")
NON_NEGATIVE = Interval(Real, 0, np.inf, closed="left")
POSITIVE = Interval(Real, 0, np.inf, closed="neither")
N_BINS = Interval(Integral, 1, MAX_N_BINS, closed="both")
SOLVER_CONSTRAINTS = {
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "tol": [NON_NEGATIVE],
}

#: The parameters of a solver with a ridge penalty of strength ``reg``.
RIDGE_SOLVER_CONSTRAINTS = {"reg": [NON_NEGATIVE], **SOLVER_CONSTRAINTS}

#: Fits with a term that depends on the number of rows warn when the weights
#: sum to less than this fraction of the rows that carry weight.
SMALL_WEIGHT_FRACTION = 0.1

_SAMPLE_HINT = (
    "fit it on an in-memory sample of the scores (X[idx].compute()), or use "
    "TemperatureScaler, PlattScaler or HistogramBinningCalibrator("
    "strategy='uniform'), which fit on dask arrays by streaming passes."
)


def renormalise(proba):
    """Rows divided by their sums; rows summing to zero become uniform.

    One-vs-rest calibrators (histogram, isotonic, BBQ, ENIR) calibrate each
    column on its own, so a row can come out all zero. Like scikit-learn's
    ``CalibratedClassifierCV`` we then return the uniform distribution: the
    calibrators saw no evidence for any class.
    """
    total = proba.sum(axis=1, keepdims=True)
    out = np.full_like(proba, 1.0 / proba.shape[1])
    np.divide(proba, total, out=out, where=total > 0)
    return out


#: How far outside [0, 1] a computed probability may fall by rounding
#: (weighted cumulative sums, another library's float arithmetic) before it
#: is reported as a defect instead of being rounded back into the interval.
UNIT_INTERVAL_TOLERANCE = 1e-9


def within_unit_interval(values, source):
    """``values`` with rounding excursions out of [0, 1] put back.

    A NaN, or a value further than :data:`UNIT_INTERVAL_TOLERANCE` outside,
    is a defect of ``source``: a RuntimeError says so, instead of a clip
    that would turn it into a plausible probability.
    """
    values = np.asarray(values, dtype=np.float64)
    tol = UNIT_INTERVAL_TOLERANCE
    if values.size and not (
        np.all(np.isfinite(values)) and values.min() >= -tol and values.max() <= 1 + tol
    ):
        bad = values[~(np.isfinite(values) & (values >= -tol) & (values <= 1 + tol))]
        raise RuntimeError(
            f"{source} returned values that are not probabilities (e.g. "
            f"{bad[:3].tolist()!r}); please report this with the data."
        )
    return np.clip(values, 0.0, 1.0)


def warn_if_weights_shrink_rows(estimator, sample_weight, term):
    """Warn when ``sample_weight`` sums to far fewer rows than carry weight.

    Weights are frequency weights (a weight of 2 is the row twice), so a fit
    with a term that depends on the number of rows (``term``, e.g. "the
    uniform mixing weight 1 / (n + 1)") counts ``sum(w)`` rows. Weights
    normalised to sum to 1, as survey and importance weights often are, then
    turn a fit on thousands of rows into one on a single row: close to its
    prior. The warning names the cause and the fix (rescale to mean 1).
    """
    if sample_weight is None:
        return
    n_rows = int(np.count_nonzero(sample_weight))
    total = float(sample_weight.sum())
    if total >= SMALL_WEIGHT_FRACTION * n_rows:
        return
    warnings.warn(
        f"{type(estimator).__name__}: sample_weight sums to {total:.3g} over "
        f"{n_rows} rows with positive weight. Weights count as repeated rows "
        "(a weight of 2 is the row twice) and this fit depends on the number "
        f"of rows through {term}, so it is fitted as if on {total:.3g} rows, "
        "close to its prior. If the weights are relative (survey or importance "
        "weights, or normalised to sum to 1), rescale them to mean 1: "
        "sample_weight * n / sample_weight.sum().",
        UserWarning,
        stacklevel=_outside_stacklevel(),
    )


class BaseCalibrator(ClassifierMixin, BaseEstimator):
    """Shared ``fit``/``predict`` plumbing of the calibrators.

    Subclasses set ``_input`` (``"logits"`` or ``"probabilities"``: which
    response of a classifier they calibrate, used by
    :class:`~sklcalib.calibration.CalibratedClassifier`), declare their
    parameters' constraints in ``_parameter_constraints`` (checked at
    ``fit``; ``_check_param_values()`` for what a declaration cannot state)
    and implement ``_fit(scores, y_idx, sample_weight)`` and
    ``_predict_proba(scores)`` on validated float64 scores of shape
    (n, n_features_in_), integer targets indexing ``classes_`` and float64
    weights (None when not given). Those that can fit on dask arrays by
    streaming passes override ``_fit_dask(X, y, sample_weight)``. Those
    whose fit has a term that depends on the number of rows return its
    description from ``_sample_size_term()``, and ``fit`` warns when the
    weights sum to far fewer rows than carry weight.
    """

    _input = LOGITS
    _parameter_constraints: ClassVar[dict] = {}

    def _check_params(self):
        """The declared constraints, then the checks no declaration states."""
        validate_params(self)
        self._check_param_values()

    def _check_param_values(self):
        """Constraints between or inside parameters (none by default)."""

    def _sample_size_term(self):
        """What in this fit depends on the number of rows, or None."""
        return None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # probabilities are non-negative; negative scores get scikit-learn's
        # "Negative values in data" error
        tags.input_tags.positive_only = self._input == PROBABILITIES
        return tags

    def _validate_scores(self, X, y="no_validation", *, reset):
        X = as_2d(as_numpy(X))
        if not reset and X.shape[1] == 1 and getattr(self, "n_features_in_", 1) > 1:
            raise ValueError(
                "scores is 1-D, but the calibrator was fitted on "
                f"{self.n_features_in_} score columns; 1-D scores are for binary "
                "problems fitted on one column. Reshape your data to "
                f"(n_samples, {self.n_features_in_})."
            )
        # float16 stays float16 until checked: the row-sum tolerance is that
        # of the input's dtype
        dtypes = [np.float64, np.float32, np.float16]
        out = validate_data(self, X, y, reset=reset, dtype=dtypes)
        X = out if isinstance(y, str) else out[0]
        if self._input == PROBABILITIES and X.size:
            X = check_prob_values(X, "scores")
        X = X.astype(np.float64, copy=False)
        return X if isinstance(y, str) else (X, out[1])

    def fit(self, X, y, sample_weight=None):
        """Fit the calibrator on held-out scores.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_classes) or (n_samples,)
            Scores of a classifier on held-out data: logits (the output of
            ``decision_function``) or probabilities (``predict_proba``)
            depending on the calibrator. For a binary problem, a 1-D array
            holds the score of the positive class ``classes_[1]``.
        y : array-like of shape (n_samples,)
            Targets; any labels a scikit-learn classifier accepts.

            With dask arrays (rows chunked), :class:`TemperatureScaler`,
            :class:`PlattScaler` and :class:`HistogramBinningCalibrator` fit
            by streaming passes over the row blocks on the active Dask
            scheduler, to the in-memory parameters; the other calibrators
            raise a ValueError (fit them on an in-memory sample).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative frequency weights, with scikit-learn's meaning: a
            weight of 2 is the row repeated, a weight of 0 the row removed,
            and a term of the fit that depends on the number of rows counts
            ``sum(sample_weight)`` rows (such fits warn when the weights sum
            to less than a tenth of the rows that carry weight: rescale
            relative weights to mean 1). None weights every sample 1. Weights
            summing past
            ``2**500`` or all below ``2**-500`` are first multiplied by the
            power of two that brings the largest into [0.5, 1) (exact), as
            their sums would overflow or underflow. With dask ``X``, a dask
            array (rechunked to X's rows) or an in-memory array (split along
            them); a block may weigh zero, the total may not.

        Returns
        -------
        self : object
            The fitted calibrator.
        """
        if any_dask(X, y, sample_weight):  # streaming passes over the row blocks
            return self._fit_dask(X, y, sample_weight)
        # torch tensors (detached if they require grad) as numpy arrays
        X, y, sample_weight = as_numpy(X), as_numpy(y), as_numpy(sample_weight)
        self._check_params()
        if y is None:  # scikit-learn's message for a missing target
            validate_data(self, as_2d(X), y)
        # targets first: a target problem is reported before a score problem
        check_classification_targets(y)
        # weights next: scikit-learn reports weight problems before score ones
        sample_weight = check_sample_weight(sample_weight, np.asarray(y).shape[0])
        classes = np.unique(np.asarray(y))
        if len(classes) == 1:  # (no class at all: validate_data's empty error)
            raise ValueError(
                "y must hold at least two classes to calibrate; got 1 class: "
                f"{classes.tolist()}."
            )
        X, y = self._validate_scores(X, y, reset=True)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        n_classes = len(self.classes_)
        n_columns = X.shape[1]
        if not (n_columns == n_classes or (n_columns == 1 and n_classes == 2)):
            raise ValueError(
                f"scores has {n_columns} columns but y has {n_classes} classes; "
                "give one score column per class (or, for a binary problem, "
                "the positive-class score as one column)."
            )
        term = self._sample_size_term()
        if term is not None:
            warn_if_weights_shrink_rows(self, sample_weight, term)
        self._fit(X, y_idx, sample_weight)
        return self

    def _fit_dask(self, X, y, sample_weight):
        """Fit on dask ``X``/``y`` by streaming passes over the row blocks."""
        raise ValueError(
            f"{type(self).__name__} cannot be fitted on dask arrays: it needs "
            f"all scores at once; {_SAMPLE_HINT}"
        )

    def _block_inputs(self, X, y, sample_weight=None):
        """One row block of a streaming fit validated as ``fit`` validates it:
        ``(scores, class indices, weights or None)`` (on a Dask worker)."""
        X = self._validate_scores(X, reset=False)
        y = np.asarray(y).ravel()
        w = check_sample_weight(sample_weight, y.shape[0], allow_zero_sum=True)
        return X, np.searchsorted(self.classes_, y), w

    @fill_doc
    def predict_proba(self, X):
        """Calibrated probabilities.

        Parameters
        ----------
        %(predict_scores_X)s
            A dask array gives a dask array, computed lazily block by block.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Calibrated probabilities; columns follow ``classes_`` and rows
            sum to 1.
        """
        check_is_fitted(self)
        if is_dask_array(X):  # lazily, block by block
            from ._streaming import predict_proba_dask

            return predict_proba_dask(self, X)
        X = self._validate_scores(X, reset=False)
        return self._predict_proba(X)

    @fill_doc
    def predict(self, X):
        """Class with the largest calibrated probability.

        %(predict_sections_X)s
        """
        if is_dask_array(X):
            check_is_fitted(self)
            from ._streaming import predict_dask

            return predict_dask(self, X)
        proba = self.predict_proba(X)  # first: NotFittedError before classes_
        return self.classes_[np.argmax(proba, axis=1)]


class BinaryOnlyMixin:
    """``fit`` refuses targets with more than two classes, naming the type.

    ``_multiclass_hint`` names the calibrators to use instead.
    """

    _multiclass_hint = (
        "use SMSCalibrator or SVSCalibrator for multiclass logits, "
        "SplineCalibrator for one-vs-rest calibration"
    )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X, y, sample_weight=None):
        """Fit the calibrator on held-out binary scores.

        Parameters
        ----------
        X : array-like of shape (n_samples,), (n_samples, 1) or (n_samples, 2)
            Scores of the positive class ``classes_[1]``, or two columns.
        y : array-like of shape (n_samples,)
            Binary targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative frequency weights (an integer weight is the same as
            repeating the row); None weights every sample 1.

        Returns
        -------
        self : object
            The fitted calibrator.
        """
        if not any_dask(X, y, sample_weight) and y is not None:
            y = as_numpy(y)  # a torch tensor of targets, detached
            y_type = type_of_target(y, input_name="y", raise_unknown=True)
            if y_type not in ("binary", "multiclass"):
                check_classification_targets(y)  # its message for other targets
            if y_type != "binary":
                raise ValueError(
                    f"Only binary classification is supported by "
                    f"{type(self).__name__}. The type of the target is {y_type}; "
                    f"{self._multiclass_hint}."
                )
        return super().fit(X, y, sample_weight)
