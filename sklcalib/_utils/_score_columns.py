"""The (outcome, score) columns a cumulative statistic or a segment audit
reads from validated probabilities, one definition for every mode.

- ``"binary"``: the positive class's probability against ``[y = labels[1]]``
  (what mcgrad and MAPIE compute);
- ``"top_label"``: the largest probability (the first maximum) against
  ``[argmax = y]``;
- ``"classwise"``: every column ``k`` against ``[y = labels[k]]``.

``"auto"`` is ``"binary"`` for two classes and ``"top_label"`` otherwise.
"""

import numpy as np

from ._binning import top_label

MODES = ("auto", "top_label", "classwise")


def resolve_mode(mode, n_classes):
    """``"binary"``, ``"top_label"`` or ``"classwise"`` for ``mode``."""
    if mode == "auto":
        return "binary" if n_classes == 2 else "top_label"
    return mode


def score_columns(p, y_idx, mode):
    """``(resolved mode, [(outcome, score), ...], column class indices)``.

    ``p`` (n, K) or (n,) probabilities whose values are already checked,
    ``y_idx`` (n,) the column of each row's label. ``outcome`` is bool,
    ``score`` float (the input's dtype). The class indices are ``[1]`` for
    binary, ``[None]`` for top-label, ``range(K)`` for classwise.
    """
    n_classes = 2 if p.ndim == 1 else p.shape[1]
    resolved = resolve_mode(mode, n_classes)
    if resolved == "binary":
        score = p if p.ndim == 1 else p[:, 1]
        return resolved, [(y_idx == 1, np.ascontiguousarray(score))], [1]
    if resolved == "top_label":
        conf, correct = top_label(p, y_idx)
        return resolved, [(correct, conf)], [None]
    columns = np.column_stack([1.0 - p, p]) if p.ndim == 1 else p
    pairs = [
        (y_idx == k, np.ascontiguousarray(columns[:, k])) for k in range(n_classes)
    ]
    return resolved, pairs, list(range(n_classes))
