"""Implementation of :mod:`sklcalib.calibration` (post-hoc calibrators).

The public names live in :mod:`sklcalib.calibration`; this package splits
them into small modules: ``_base`` (input checks shared by all calibrators),
``_temperature`` (with ``_temperature_fused``, its compiled kernel for large
logits, imported on demand), ``_scaling`` (vector, matrix, Platt), ``_binning``
(histogram, isotonic), ``_netcal`` (BBQ, ENIR, beta) and ``_meta``
(:class:`~sklcalib.calibration.CalibratedClassifier`).
"""
