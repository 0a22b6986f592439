import subprocess
import sys

import sklcalib


def test_version_is_a_string():
    assert isinstance(sklcalib.__version__, str)
    assert sklcalib.__version__.count(".") == 2


def test_import_is_lazy():
    # ``import sklcalib`` must not pull in torch, skorch, numba or netcal.
    code = (
        "import sys, sklcalib; "
        "heavy = [m for m in ('torch', 'skorch', 'numba', 'netcal') "
        "if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


def test_unknown_attribute_raises():
    import pytest

    with pytest.raises(AttributeError, match="no_such_name"):
        sklcalib.no_such_name  # noqa: B018
