"""Deprecated: ``sklcalib report`` lives in :mod:`sklcalib.cli.report_command`.

The old path keeps working, with a ``FutureWarning``; the calibrator names
are the registry's (:data:`sklcalib.calibration.CALIBRATORS`).
"""

from sklcalib._utils._moved import moved_getattr

__getattr__ = moved_getattr(
    __name__,
    {
        "CALIBRATORS": "sklcalib.calibration",
        "add_report_parser": "sklcalib.cli.report_command",
        "available_calibrators": "sklcalib.cli.report_command",
        "run_report": "sklcalib.cli.report_command",
    },
)
