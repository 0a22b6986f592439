"""The checks of held-out scores and targets that the calibrator search and
the segment calibrator share: the scores' shape and width, the targets'
classes, and whether the scores are logits or probabilities."""

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_consistent_length, column_or_1d

from sklcalib._utils._validation import as_numpy, check_prob_values, check_sample_weight

from ._base import LOGITS, PROBABILITIES


def guess_response(scores):
    """ "probabilities" when every value is in [0, 1] and (for 2-D scores)
    rows sum to 1 within float32 round-off; "logits" otherwise."""
    if scores.size == 0 or scores.min() < 0 or scores.max() > 1:
        return LOGITS
    if scores.ndim == 2 and scores.shape[1] > 1:
        if np.max(np.abs(scores.sum(axis=1) - 1.0)) > 1e-4:
            return LOGITS
    return PROBABILITIES


def validate_scores(estimator, scores, *, reset, fitted="estimator"):
    """float64 scores of shape (n,) or (n, K) (one column taken as 1-D);
    sets ``estimator.n_features_in_`` (``reset``) or checks the width
    against it (the message names the ``fitted`` object)."""
    scores = check_array(
        as_numpy(scores), ensure_2d=False, dtype=np.float64, input_name="scores"
    )
    if scores.ndim == 2 and scores.shape[1] == 1:
        scores = scores[:, 0]
    if scores.ndim not in (1, 2):
        raise ValueError(
            "scores must have shape (n_samples,) or (n_samples, n_classes); "
            f"got {scores.shape}."
        )
    width = 1 if scores.ndim == 1 else scores.shape[1]
    if reset:
        estimator.n_features_in_ = width
    elif width != estimator.n_features_in_:
        raise ValueError(
            f"scores has {width} columns; the {fitted} was fitted on "
            f"{estimator.n_features_in_}."
        )
    return scores


def validate_fit_inputs(estimator, scores, y, sample_weight, *, fitted, warn=False):
    """The checks of ``fit``: ``(scores, y, weights)`` (weights None when
    not given); sets ``n_features_in_``, ``classes_`` and ``response_`` (the
    estimator's ``response`` parameter, "auto" resolved). ``warn``: a 2-D
    column ``y`` warns as scikit-learn's classifiers do."""
    y = column_or_1d(as_numpy(y), warn=warn)
    check_classification_targets(y)
    scores = validate_scores(estimator, scores, reset=True, fitted=fitted)
    check_consistent_length(scores, y)
    w = check_sample_weight(sample_weight, y.shape[0])
    estimator.classes_ = np.unique(y)
    n_classes = len(estimator.classes_)
    if n_classes < 2:
        raise ValueError(
            "y must hold at least two classes; got 1 class: "
            f"{estimator.classes_.tolist()}."
        )
    width = estimator.n_features_in_
    if not (width == n_classes or (width in (1, 2) and n_classes == 2)):
        raise ValueError(
            f"scores has {width} columns but y has {n_classes} classes; give "
            "one column per class (or 1-D positive-class scores for binary y)."
        )
    response = estimator.response
    if response == "auto":
        response = guess_response(scores)
    if response == PROBABILITIES:
        check_prob_values(scores, "scores")
    estimator.response_ = response
    return scores, y, w
