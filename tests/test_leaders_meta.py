"""The leaders inside CalibratedClassifier: each takes the response its kind
demands (decision_function for logits, predict_proba for probabilities), with
cross-fitting and sample weights, on binary and multiclass models."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from sklcalib.calibration import (
    BetaScaler,
    CalibratedClassifier,
    QuadraticScaler,
    SMSCalibrator,
    SplineCalibrator,
    SVSCalibrator,
)


def _data(n_classes, seed=0):
    return make_classification(
        n_samples=900,
        n_features=8,
        n_informative=5,
        n_classes=n_classes,
        random_state=seed,
    )


@pytest.mark.parametrize(
    ("calibrator", "n_classes"),
    [
        (SMSCalibrator(), 3),
        (SVSCalibrator(), 3),
        (SplineCalibrator(), 3),
        (QuadraticScaler(), 2),
        (BetaScaler(), 2),
        (SplineCalibrator(), 2),
        (SMSCalibrator(), 2),
    ],
    ids=repr,
)
# a binary logistic regression's logits are what Platt scaling fits: the
# quadratic and beta maps add parameters and no gain, and the calibration
# check may say so (CalibrationWarning); the test asks for sane output only
@pytest.mark.filterwarnings(
    "ignore:QuadraticScaler makes the probabilities worse:"
    "sklcalib.calibration.CalibrationWarning",
    "ignore:BetaScaler makes the probabilities worse:"
    "sklcalib.calibration.CalibrationWarning",
    # each of the three calibrators is fitted on a third of 600 rows
    "ignore:SplineCalibrator has about:sklcalib.calibration.CalibrationWarning",
)
def test_in_calibrated_classifier(calibrator, n_classes):
    X, y = _data(n_classes)
    labels = np.array(["a", "b", "c"])[y]
    w = np.random.default_rng(0).integers(1, 3, size=len(y))
    model = CalibratedClassifier(LogisticRegression(), calibrator=calibrator, cv=3)
    model.fit(X[:600], labels[:600], sample_weight=w[:600])
    proba = model.predict_proba(X[600:])
    assert proba.shape == (300, n_classes)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    assert list(model.classes_) == sorted(set(labels))
    # a sane calibration: no worse than a constant prediction of the priors
    prior = np.bincount(y[:600], minlength=n_classes) / 600
    assert log_loss(labels[600:], proba) < log_loss(
        labels[600:], np.tile(prior, (300, 1))
    )
