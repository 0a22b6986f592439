"""The proper scoring rules as metrics: mean negative log-likelihood and mean
Brier score (the per-row scores are those of :mod:`sklcalib._utils._scores`).
"""

from sklcalib._utils._scores import (
    as_columns,
    row_brier,
    row_log_loss,
    weighted_mean,
)
from sklcalib._utils._validation import check_prob_values, check_targets


def scoring_rule_inputs(y_true, y_prob, labels=None, sample_weight=None):
    """Validated ``(columns, y_idx, sample_weight)``: (n, K) probability
    columns (two for a 1-D binary input), the true column of every row and
    the weights (None, or positive)."""
    y_idx, p, _, w = check_targets(y_true, y_prob, labels, sample_weight)
    return as_columns(check_prob_values(p)), y_idx, w


def negative_log_likelihood(y_true, y_prob, *, labels=None, sample_weight=None):
    """Mean ``-log p_y`` (probabilities clipped at the machine epsilon of the
    dtype, as ``sklearn.metrics.log_loss``); the report's ``"nll"``."""
    columns, y_idx, w = scoring_rule_inputs(y_true, y_prob, labels, sample_weight)
    return weighted_mean(row_log_loss(columns, y_idx), w)


def brier_score(y_true, y_prob, *, labels=None, sample_weight=None):
    """Mean ``sum_k (p_k - [y = k])^2``; the report's ``"brier"``."""
    columns, y_idx, w = scoring_rule_inputs(y_true, y_prob, labels, sample_weight)
    return weighted_mean(row_brier(columns, y_idx), w)
