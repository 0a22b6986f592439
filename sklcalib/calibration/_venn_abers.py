"""Venn–ABERS calibration (Vovk & Petej, 2014), one-vs-rest on probabilities."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from sklcalib._utils._docstrings import fill_doc

from ._one_vs_rest import OneVsRestCalibrator
from ._venn_abers_core import venn_abers_lookup, venn_abers_table


@fill_doc
class VennAbersCalibrator(OneVsRestCalibrator):
    """Inductive Venn–ABERS calibration (Vovk & Petej, 2014).

    For a test score s, two isotonic regressions are fitted to the
    calibration data with the test point added, once labelled 0 and once
    labelled 1; their values at s are ``p0 <= p1``, an interval that holds a
    calibrated probability under exchangeability. ``predict_proba`` merges
    them into ``p1 / (1 - p0 + p1)``, the probability minimising the worst
    log loss over the two (as the ``venn-abers`` package does);
    ``predict_interval`` returns the interval itself. Multiclass problems are
    calibrated one-vs-rest, the merged probabilities renormalised.

    Venn–ABERS is a binary method: the one-vs-rest renormalisation spreads
    probability over all the classes and lowers the confidence of the
    predicted class, so on multiclass problems it can be much worse than the
    raw scores (``CalibratedClassifier`` warns when its cross-validated
    log-loss is). Use it for binary problems; for multiclass scores prefer
    temperature, vector or Dirichlet calibration, or ``calibrator="auto"``.

    All test scores are computed at once: the calibration scores are sorted
    once, the isotonic values for every gap between distinct calibration
    scores come from one sweep over convex hulls of the cumulative sum
    diagram, and each test score is a binary search, O((n + m) log n) for n
    calibration and m test scores, instead of two isotonic fits per test
    score. With numba installed, the sweep over 2 000 or more distinct
    calibration scores runs compiled (cached on disk after the first call).

    Attributes
    ----------
    calibrators_ : list of tuple
        ``(distinct_scores, p0, p1)`` per calibrated column: the distinct
        calibration scores and the two isotonic values in each of their
        ``len(distinct_scores) + 1`` gaps (one column for binary problems,
        one per class otherwise).
    %(fitted_probability_inputs)s

    Notes
    -----
    A test score equal to a calibration score is placed after the equal
    calibration scores for ``p0`` and before them for ``p1`` (the placements
    giving the widest interval), as Vovk, Petej and Fedorova (2015) and the
    ``venn-abers`` package do. With ``sample_weight``, a calibration sample
    of weight w counts as w samples in the isotonic fits; the test point
    always has weight 1, one row, so weights summing to far fewer rows than
    carry weight (normalised to sum to 1, say) make the test point dominate
    the interval, and warn: rescale relative weights to mean 1.

    Examples
    --------
    >>> from sklcalib.calibration import VennAbersCalibrator
    >>> from sklcalib.datasets import make_binary_scores
    >>> p1, y = make_binary_scores(500, truth=lambda p: p**2)  # over-confident
    >>> va = VennAbersCalibrator().fit(p1, y)
    >>> low, high = va.predict_interval([0.5])
    >>> bool(low[0] <= va.predict_proba([0.5])[0, 1] <= high[0])
    True
    >>> bool(abs(va.predict_proba([0.5])[0, 1] - 0.25) < 0.1)
    True
    """

    def __init__(self):
        pass

    def _sample_size_term(self):
        return "the test point, which weighs one row"

    @staticmethod
    def _fit_column(p, target, sample_weight=None):
        return venn_abers_table(p, target, sample_weight)

    @staticmethod
    def _predict_column(model, p):
        p0, p1 = venn_abers_lookup(model, p)
        return p1 / (1.0 - p0 + p1)

    def predict_interval(self, X):
        """The Venn–ABERS interval ``(p0, p1)`` of every score.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_classes) or (n_samples,)
            Probabilities of the same width as those given to ``fit``.

        Returns
        -------
        p0 : ndarray of shape (n_samples,) or (n_samples, n_classes)
            Isotonic value at the score with the test point labelled 0 (the
            lower end). Binary problems give the positive class's interval
            as 1-D arrays; multiclass problems one one-vs-rest interval per
            class (not renormalised).
        p1 : ndarray of the same shape as ``p0``
            The upper end: the test point labelled 1.
        """
        check_is_fitted(self)
        X = self._validate_scores(X, reset=False)
        bounds = [
            venn_abers_lookup(model, X[:, c])
            for model, (c, _) in zip(self.calibrators_, self._columns(X), strict=True)
        ]
        p0 = np.column_stack([low for low, _ in bounds])
        p1 = np.column_stack([high for _, high in bounds])
        if len(self.classes_) == 2:
            return p0[:, 0], p1[:, 0]
        return p0, p1
