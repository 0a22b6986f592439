"""Calibrators composed with something else, shared by the selection and by
CalibratedClassifier: a prior correction in front of a calibrator, and a
calibrator fitted on the classes that a calibration part holds."""

import numpy as np
from sklearn.base import clone

from sklcalib._utils._scores import as_columns, binary_logits, log_floored

from ._base import LOGITS, PROBABILITIES, renormalise, softmax_rows


def as_probabilities(scores, kind):
    """(n, K) probabilities of scores of ``kind``: the softmax of logits (the
    sigmoid of a binary margin), or the probabilities as columns."""
    scores = np.asarray(scores, dtype=np.float64)
    if kind == LOGITS:
        return softmax_rows(binary_logits(scores))
    return as_columns(scores)


class PriorThen:
    """A fitted prior correction followed by a calibrator (or none).

    Probability calibrators get the corrected probabilities; logit
    calibrators the shifted logits ``z + log(target / train)``; None returns
    the corrected probabilities.
    """

    def __init__(self, prior, calibrator):
        self.prior = prior
        self.calibrator = calibrator
        self._input = PROBABILITIES if calibrator is None else calibrator._input

    def _corrected(self, scores):
        if self._input == LOGITS:
            return self.prior.shift_logits(scores)
        return self.prior.predict_proba(scores)

    def fit(self, scores, y, sample_weight=None):
        proba = as_probabilities(scores, self._input)
        self.prior = clone(self.prior).fit(proba, y, sample_weight)
        self.classes_ = self.prior.classes_
        if self.calibrator is not None:
            self.calibrator = clone(self.calibrator).fit(
                self._corrected(scores), y, sample_weight=sample_weight
            )
            self.classes_ = self.calibrator.classes_
        return self

    def predict_proba(self, scores):
        corrected = self._corrected(scores)
        if self.calibrator is None:
            return as_columns(np.asarray(corrected, dtype=np.float64))
        return self.calibrator.predict_proba(corrected)


class PresentClasses:
    """A calibrator fitted on the classes a calibration part holds.

    A part of the data that lacks some of ``classes`` (a fold of unshuffled
    k-fold, a small class) cannot fit a calibrator on all the score columns.
    As scikit-learn's ``CalibratedClassifierCV`` does, the columns are mapped
    onto the full class set: the calibrator is fitted on the columns of the
    classes present (the logits of those columns, or their probabilities
    renormalised), the missing classes keep the uncalibrated probability, and
    the present ones share the rest as the calibrator says. A part holding
    one class fits nothing: its probabilities are the uncalibrated ones.
    """

    def __init__(self, calibrator, classes):
        self.calibrator = calibrator
        self.classes = classes
        self._input = PROBABILITIES if calibrator is None else calibrator._input

    def _sub_scores(self, scores):
        scores = np.asarray(scores, dtype=np.float64)
        if self._input == LOGITS:
            return binary_logits(scores)[:, self.present_]
        return renormalise(as_columns(scores)[:, self.present_])

    def fit(self, scores, y, sample_weight=None):
        present = np.unique(np.asarray(y))
        self.present_ = np.searchsorted(self.classes, present)
        self.classes_ = np.asarray(self.classes)
        self.fitted_ = None
        if self.calibrator is None or len(present) < 2:
            return self
        self.fitted_ = self.calibrator.fit(
            self._sub_scores(scores), y, sample_weight=sample_weight
        )
        return self

    def predict_proba(self, scores):
        base = as_probabilities(scores, self._input)
        if self.fitted_ is None:
            return base
        sub = self._sub_scores(scores)
        mass = base[:, self.present_].sum(axis=1, keepdims=True)
        out = base.copy()
        out[:, self.present_] = self.fitted_.predict_proba(sub) * mass
        return out


def fit_on_classes(calibrator, scores, y, classes, sample_weight=None):
    """``calibrator`` (a fresh, unfitted object: it is fitted in place) fitted
    on ``scores``; wrapped in :class:`PresentClasses` when ``y`` lacks some of
    ``classes``."""
    if len(np.unique(np.asarray(y))) < len(classes):
        return PresentClasses(calibrator, classes).fit(scores, y, sample_weight)
    return calibrator.fit(scores, y, sample_weight=sample_weight)


def logits_of(proba):
    """Logits that a logit calibrator takes for probabilities: ``log p``
    (floored), or the log-odds of a binary problem."""
    log_p = log_floored(proba)
    return log_p[:, 1] - log_p[:, 0] if proba.shape[1] == 2 else log_p
