"""A classifier of features whose probabilities come out of a calibrator, so
that scikit-learn's estimator checks, which feed arbitrary features, can fit
and test the calibrators.

Features become logits by a nearest-centroid rule learnt at ``fit`` (logit of
class k: ``x . m_k - |m_k|^2 / 2`` with ``m_k`` the weighted mean of class k;
integer weights act as repeated rows), or, with ``logits="columns"``, are
the first n_classes feature columns times 4 (scores that carry little
information, whose fits are well conditioned: for the weight-equivalence
check, which compares fits to 1e-7); the logits are taken as they are or
through a softmax as probabilities, whichever the calibrator takes, and the
calibrator is fitted on the scores of the same rows, with the same weights.
"""

import numpy as np
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data


class ScoresOf(ClassifierMixin, BaseEstimator):
    """Features -> centroid logits -> the calibrator's scores -> calibrator."""

    def __init__(self, calibrator=None, logits="centroids"):
        self.calibrator = calibrator
        self.logits = logits

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = (
            self.calibrator.__sklearn_tags__().classifier_tags.multi_class
        )
        return tags

    def _scores(self, X):
        # row by row (no BLAS blocking): a row's scores do not depend on the
        # other rows, which the subset-invariance checks rely on
        centroids = self.centroids_
        if self.logits == "columns":
            logits = 4 * X[:, : len(centroids)]
        else:
            logits = np.einsum("ij,kj->ik", X, centroids, optimize=False)
            logits -= 0.5 * np.einsum("kj,kj->k", centroids, centroids)
        if self.calibrator._input == "logits":
            if logits.shape[1] == 2 and not self._multiclass():
                return logits[:, 1] - logits[:, 0]
            return logits
        return softmax(logits, axis=1)

    def _multiclass(self):
        return self.calibrator.__sklearn_tags__().classifier_tags.multi_class

    def fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        classes, y_idx = np.unique(y, return_inverse=True)
        w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight)
        centroids = []
        for k in range(len(classes)):
            wk = w * (y_idx == k)
            total = wk.sum()
            centroids.append(wk @ X / total if total > 0 else np.zeros(X.shape[1]))
        self.centroids_ = np.array(centroids).reshape(len(classes), X.shape[1])
        # weights only when given: a calibrator may not take them
        weights = {} if sample_weight is None else {"sample_weight": sample_weight}
        self.calibrator_ = clone(self.calibrator).fit(self._scores(X), y, **weights)
        self.classes_ = self.calibrator_.classes_
        return self

    def predict_proba(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.calibrator_.predict_proba(self._scores(X))

    def predict(self, X):
        proba = self.predict_proba(X)  # first: NotFittedError before classes_
        return self.classes_[np.argmax(proba, axis=1)]
