"""The one-vs-rest plumbing of the probability calibrators that calibrate
each class's column on its own (histogram binning, isotonic regression,
scaling-binning, Venn-ABERS and the netcal adapters)."""

import numpy as np

from ._base import (
    PROBABILITIES,
    BaseCalibrator,
    renormalise,
    within_unit_interval,
)


class OneVsRestCalibrator(BaseCalibrator):
    """Calibrate each probability column against ``[y == k]`` on its own.

    Binary problems calibrate the positive-class column only and return
    ``[1 - q, q]``; multiclass rows are renormalised to sum to 1 (rows whose
    calibrated columns are all 0 become uniform, see ``renormalise``).
    """

    _input = PROBABILITIES

    def _fit(self, scores, y_idx, sample_weight=None):
        columns = self._columns(scores)
        self.calibrators_ = [
            self._fit_column(
                scores[:, c], (y_idx == k).astype(np.float64), sample_weight
            )
            for c, k in columns
        ]

    def _columns(self, scores):
        """(score column, class index) pairs to calibrate."""
        if len(self.classes_) == 2:
            return [(scores.shape[1] - 1, 1)]
        return [(k, k) for k in range(scores.shape[1])]

    def _predict_proba(self, scores):
        columns = self._columns(scores)
        calibrated = np.column_stack(
            [
                self._predict_column(model, scores[:, c])
                for model, (c, _) in zip(self.calibrators_, columns, strict=True)
            ]
        )
        calibrated = within_unit_interval(calibrated, type(self).__name__)
        if len(self.classes_) == 2:
            return np.column_stack([1.0 - calibrated[:, 0], calibrated[:, 0]])
        return renormalise(calibrated)
