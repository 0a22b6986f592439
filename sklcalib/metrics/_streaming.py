"""The uniform-bin metrics on dask arrays: one accumulator per row block.

Every block of ``y_prob`` (with the matching blocks of ``y_true`` and
``sample_weight``) is validated and reduced to a
:class:`CalibrationAccumulator` on a worker of the active Dask scheduler
(a ``distributed.Client`` if there is one); the client merges the partial
accumulators in row order. Imported only when a dask array arrives.
"""

from sklcalib._utils._dask import map_row_blocks, row_blocks, unique_values
from sklcalib._utils._validation import (
    check_found_classes,
    check_labels_for,
    is_dask_array,
)

from ._accumulator import _PARTS, CalibrationAccumulator


def _block_statistics(p, y, w, n_bins, classes, parts):
    acc = CalibrationAccumulator._collecting(n_bins, classes, parts)
    return acc.update(y, p, w)


def stream_statistics(
    y_true, y_prob, *, n_bins=15, labels=None, sample_weight=None, parts=_PARTS
):
    """A :class:`CalibrationAccumulator` of dask inputs, computed block by block.

    ``y_prob`` must be a dask array of known row chunks; ``y_true`` and
    ``sample_weight`` may be dask arrays (rechunked to ``y_prob``'s rows when
    their chunks differ) or in-memory arrays (split along them). Without
    ``labels``, one extra pass over ``y_true`` finds them.
    """
    if not is_dask_array(y_prob):
        raise ValueError(
            "y_true or sample_weight is a dask array but y_prob is not: pass "
            "y_prob as a dask array too (the metric streams over y_prob's row "
            "blocks), or compute y_true and sample_weight."
        )
    if y_prob.ndim not in (1, 2):
        raise ValueError(
            "y_prob must be 1-D (binary positive-class probabilities) or 2-D "
            f"(n_samples, n_classes), got a dask array of shape {y_prob.shape}."
        )
    if y_prob.ndim == 2 and y_prob.shape[1] == 1:
        y_prob = y_prob[:, 0]  # one column is the positive-class probability
    p, y, w = row_blocks(
        y_prob, "y_prob", {"y_true": y_true, "sample_weight": sample_weight}
    )
    n_columns = 2 if p.ndim == 1 else p.shape[1]
    if labels is None:
        classes = unique_values(y)
        check_found_classes(classes, n_columns, p.ndim)
    else:
        classes = check_labels_for(labels, n_columns, p.ndim)
    parts = tuple(parts)
    states = map_row_blocks(_block_statistics, [p, y, w], n_bins, classes, parts)
    total = CalibrationAccumulator._collecting(n_bins, classes, parts)
    for state in states:  # block order: a fixed order of the additions
        total.merge(state)
    return total
