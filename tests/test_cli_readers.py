"""``sklcalib report`` on files people were sent: every bad file, however odd,
ends in one line on stderr and exit status 2, never a traceback, a hang or a
memory blow-up; the hints name the offending column and the likely cause."""

import io
import os
import zipfile

import numpy as np
import pytest
from scipy.special import softmax

import sklcalib.io as readers
from sklcalib._utils import _memory
from sklcalib._utils._validation import check_prob_values
from sklcalib.cli import main
from sklcalib.io import _predictions, _tables


def _run(capsys, *argv):
    status = main(["report", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


def _one_line_error(capsys, *argv):
    """Run the command; assert exit 2 and one line on stderr; return it."""
    status, out, err = _run(capsys, *argv)
    assert status == 2, (out, err)
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith("sklcalib report: error: ")
    assert "Traceback" not in err
    return err


def _proba(n=50, k=3, seed=0):
    rng = np.random.default_rng(seed)
    p = softmax(rng.normal(size=(n, k)), axis=1)
    y = rng.integers(0, k, size=n)
    return y, p


def _csv(path, header, rows):
    path.write_text("\n".join([",".join(header), *(",".join(r) for r in rows)]) + "\n")
    return path


# ----------------------------------------------------------------------------
# memory: sizes read before anything is decompressed or allocated
# ----------------------------------------------------------------------------
def test_zip_bomb_is_refused_from_the_zip_directory(capsys, tmp_path, monkeypatch):
    # 4 MB of zeros compress to a few kB; the declared size is read from the
    # zip directory, so nothing is inflated before the refusal
    path = tmp_path / "bomb.npz"
    np.savez_compressed(
        path, y_true=np.zeros(250_000, dtype=np.int8), y_prob=np.zeros(250_000 * 2)
    )
    assert path.stat().st_size < 100_000
    inflated = []
    monkeypatch.setattr(np.lib.format, "read_array", lambda *a, **k: inflated.append(1))
    err = _one_line_error(capsys, path, "--max-bytes", "1M")
    assert "would take" in err and "more than the limit of 1.0 MiB" in err
    assert inflated == []


@pytest.mark.parametrize(
    ("text", "size"),
    [("1000", 1000), ("2K", 2048), ("1.5G", 3 << 29), ("3MiB", 3 << 20)],
)
def test_parse_size(text, size):
    assert _memory.parse_size(text) == size


def test_bad_max_bytes_is_a_usage_error(capsys, tmp_path):
    status, _, err = _run(capsys, tmp_path / "x.csv", "--max-bytes", "lots")
    assert status == 2 and "--max-bytes" in err and "not a size" in err


def test_npy_header_declaring_a_huge_shape(capsys, tmp_path):
    path = tmp_path / "huge.npy"
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": "<f8", "fortran_order": False, "shape": (10**12, 3)}
        )
        fh.write(b"\0" * 64)
    err = _one_line_error(capsys, path)
    assert "of shape (1000000000000, 3)" in err and "more than the limit" in err


def test_npy_header_declaring_more_than_the_file_holds(capsys, tmp_path):
    path = tmp_path / "short.npy"
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": "<f8", "fortran_order": False, "shape": (1000, 3)}
        )
        fh.write(b"\0" * 64)
    err = _one_line_error(capsys, path)
    assert "declares shape (1000, 3)" in err and "truncated" in err


def test_huge_csv_is_refused_before_parsing(capsys, tmp_path):
    y, p = _proba(20_000)
    path = tmp_path / "big.csv"
    np.savetxt(
        path,
        np.column_stack([y, p]),
        delimiter=",",
        header="y_true,0,1,2",
        comments="",
        fmt=["%d", "%.6f", "%.6f", "%.6f"],
    )
    err = _one_line_error(capsys, path, "--max-bytes", "100K")
    assert "about 20,0" in err and "rows would take" in err


def test_memory_error_while_parsing_is_one_line(capsys, tmp_path, monkeypatch):
    y, p = _proba()
    path = tmp_path / "p.csv"
    _csv(
        path,
        ["y_true", "a", "b", "c"],
        [["abc"[k], *map(str, row)] for k, row in zip(y, p, strict=True)],
    )

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(np, "loadtxt", no_memory)
    assert "not enough memory" in _one_line_error(capsys, path)


# ----------------------------------------------------------------------------
# odd bytes
# ----------------------------------------------------------------------------
def test_csv_field_longer_than_the_csv_modules_limit(capsys, tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("y_true,a,b\na,0.5," + "x" * 200_000 + "\n")
    err = _one_line_error(capsys, path)
    assert "column 'b'" in err and "not a number in row 1" in err
    assert len(err) < 400


def test_csv_header_of_absurd_width(capsys, tmp_path):
    path = tmp_path / "header.csv"
    path.write_text("y_true," + ",".join(f"c{i}" for i in range(300_000)) + "\n")
    assert "header line is longer than" in _one_line_error(capsys, path)


def test_csv_ragged_rows(capsys, tmp_path):
    path = _csv(
        tmp_path / "r.csv", ["y_true", "a", "b"], [["a", "0.5", "0.5"], ["b", "1"]]
    )
    assert "fields, the header 3" in _one_line_error(capsys, path)


def test_garbage_npz(capsys, tmp_path):
    path = tmp_path / "garbage.npz"
    path.write_bytes(os.urandom(2000))
    assert "not an .npz archive" in _one_line_error(capsys, path)


def test_truncated_zip(capsys, tmp_path):
    y, p = _proba()
    good = tmp_path / "good.npz"
    np.savez(good, y_true=y, y_prob=p)
    path = tmp_path / "cut.npz"
    path.write_bytes(good.read_bytes()[:300])
    assert "not a readable .npz archive" in _one_line_error(capsys, path)


def test_npz_renamed_npy_and_back(capsys, tmp_path):
    y, p = _proba()
    npz = tmp_path / "a.npy"
    np.savez(io.BytesIO(), y_true=y)  # warm numpy's zip writer
    with open(npz, "wb") as fh:
        np.savez(fh, y_true=y, y_prob=p)
    assert "is an .npz archive (zip)" in _one_line_error(capsys, npz)
    npy = tmp_path / "b.npz"
    with open(npy, "wb") as fh:
        np.save(fh, np.column_stack([y, p]))
    assert "holds a single array (.npy)" in _one_line_error(capsys, npy)


def test_npy_without_a_numpy_header(capsys, tmp_path):
    path = tmp_path / "text.npy"
    path.write_text("y_true,a,b\n")
    assert "no NumPy header" in _one_line_error(capsys, path)


def test_parquet_list_cells_with_nan(capsys, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow", reason="parquet needs the parquet extra")
    frame = pd.DataFrame(
        {"y_true": ["a", "b"], "a": [[0.5, np.nan], [0.1]], "b": [0.5, 0.9]}
    )
    path = tmp_path / "lists.parquet"
    frame.to_parquet(path)
    err = _one_line_error(capsys, path)
    assert "column 'a' holds a" in err and "not a number" in err


def test_unreadable_file(capsys, tmp_path, monkeypatch):
    path = _csv(tmp_path / "secret.csv", ["y_true", "a", "b"], [["a", "1", "0"]])

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    # root reads a chmod 000 file anyway: refuse the open itself
    monkeypatch.setattr(_tables, "open", denied, raising=False)
    assert "permission denied" in _one_line_error(capsys, path)


# ----------------------------------------------------------------------------
# paths that are not regular files, each named
# ----------------------------------------------------------------------------
def test_directory(capsys, tmp_path):
    path = tmp_path / "folder.csv"
    path.mkdir()
    assert "is a directory, not a regular file" in _one_line_error(capsys, path)


def test_fifo(capsys, tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this platform")
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    # never opened: reading a FIFO without a writer would block forever
    assert "is a named pipe (FIFO)" in _one_line_error(capsys, path)


def test_dangling_symlink(capsys, tmp_path):
    path = tmp_path / "link.csv"
    path.symlink_to(tmp_path / "gone.csv")
    err = _one_line_error(capsys, path)
    assert "a dangling symbolic link" in err and "gone.csv" in err


def test_character_device(capsys):
    if not os.path.exists(os.devnull) or os.name != "posix":
        pytest.skip("no /dev/null")
    err = _one_line_error(capsys, os.devnull)
    assert "is a character device" in err


def test_missing_file(capsys, tmp_path):
    assert "no such file" in _one_line_error(capsys, tmp_path / "none.csv")


# ----------------------------------------------------------------------------
# hints that name the column and the cause
# ----------------------------------------------------------------------------
def _rows(y, p, names):
    return [
        [names[k], *(repr(float(v)) for v in row)] for k, row in zip(y, p, strict=True)
    ]


def test_pandas_index_column(capsys, tmp_path):
    y, p = _proba()
    path = tmp_path / "p.csv"
    lines = [",y_true,a,b,c"] + [
        f"{i},{'abc'[k]}," + ",".join(f"{v:.6f}" for v in row)
        for i, (k, row) in enumerate(zip(y, p, strict=True))
    ]
    path.write_text("\n".join(lines) + "\n")
    err = _one_line_error(capsys, path)
    assert "row index pandas writes" in err and "index=False" in err


def test_id_column(capsys, tmp_path):
    y, p = _proba()
    ids = np.arange(1000, 1000 + len(y))
    rows = [
        [r[0], str(i), *r[1:]] for i, r in zip(ids, _rows(y, p, "abc"), strict=True)
    ]
    path = _csv(tmp_path / "p.csv", ["y_true", "id", "a", "b", "c"], rows)
    err = _one_line_error(capsys, path)
    assert "column 'id'" in err and "identifier" in err
    assert "--logits" not in err


def test_percent(capsys, tmp_path):
    y, p = _proba()
    path = _csv(tmp_path / "p.csv", ["y_true", "a", "b", "c"], _rows(y, 100 * p, "abc"))
    err = _one_line_error(capsys, path)
    assert "in percent" in err and "divide the class columns by 100" in err


def test_logits_given_probabilities_is_refused(capsys, tmp_path):
    y, p = _proba()
    path = _csv(tmp_path / "p.csv", ["y_true", "a", "b", "c"], _rows(y, p, "abc"))
    err = _one_line_error(capsys, path, "--logits")
    assert "these are probabilities" in err and "logits=True (--logits)" in err
    # the same file without --logits is fine
    assert _run(capsys, path)[0] == 0


def test_npz_integer_labels_with_classes_are_column_indices(capsys, tmp_path):
    y, p = _proba(k=2)
    path = tmp_path / "p.npz"
    np.savez(path, y_true=y, y_prob=p, classes=np.array(["good", "bad"]))
    status, out, err = _run(capsys, path, "--json")
    assert status == 0, err
    assert '"good"' in out and '"bad"' in out
    import json

    from sklcalib.metrics import calibration_report

    got = json.loads(out)["report"]["ece"]
    assert got == pytest.approx(calibration_report(y, p)["ece"], rel=1e-12)
    # out of range: the message says that integers are indices
    np.savez(path, y_true=y + 3, y_prob=p, classes=np.array(["good", "bad"]))
    assert "integer labels are column indices" in _one_line_error(capsys, path)


def test_the_librarys_probability_check_decides(capsys, tmp_path, monkeypatch):
    """A float32 softmax written as text and as an .npz is accepted exactly
    when the library's single check accepts the same values."""
    rng = np.random.default_rng(1)
    p32 = softmax(rng.normal(size=(400, 10)).astype(np.float32) * 4, axis=1)
    y = rng.integers(0, 10, size=400)
    p64 = p32.astype(np.float64)
    try:
        check_prob_values(p64)
        want = 0
    except ValueError:
        want = 2
    npz = tmp_path / "p.npz"
    np.savez(npz, y_true=y, y_prob=p32)
    csv_path = tmp_path / "p.csv"
    lines = ["y_true," + ",".join(map(str, range(10)))] + [
        f"{k}," + ",".join(repr(float(v)) for v in row)
        for k, row in zip(y, p32, strict=True)
    ]
    csv_path.write_text("\n".join(lines) + "\n")
    for path in (npz, csv_path):
        assert _run(capsys, path)[0] == want, path
    # and it is the library's function that is called
    calls = []
    monkeypatch.setattr(
        _predictions, "check_prob_values", lambda p, **k: calls.append(p) or p
    )
    pred = readers.read_predictions(npz)
    # checked in the dtype it was stored in, kept as float64
    assert len(calls) == 1 and calls[0].dtype == np.float32
    np.testing.assert_allclose(calls[0], pred.scores, rtol=1e-6)


def test_zip_member_with_object_array_is_refused(capsys, tmp_path):
    path = tmp_path / "obj.npz"
    buffer = io.BytesIO()
    np.save(buffer, np.array([0, 1], dtype=object), allow_pickle=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("y_true.npy", buffer.getvalue())
        b2 = io.BytesIO()
        np.save(b2, np.eye(2))
        archive.writestr("y_prob.npy", b2.getvalue())
    assert "refused, because loading a pickle" in _one_line_error(capsys, path)


def test_header_without_rows_is_one_line_without_numpys_warning(capsys, tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("y_true,a,b\n\n")
    assert "no rows" in _one_line_error(capsys, path)


def test_encrypted_or_unsupported_zip_member_is_one_line(capsys, tmp_path, monkeypatch):
    y, p = _proba()
    path = tmp_path / "p.npz"
    np.savez(path, y_true=y, y_prob=p)

    def encrypted(*args, **kwargs):
        raise RuntimeError("File 'y_true.npy' is encrypted, password required")

    monkeypatch.setattr(zipfile.ZipFile, "open", encrypted)
    assert "is encrypted" in _one_line_error(capsys, path)


def test_csv_with_bom_crlf_quotes_and_spaces(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes(
        b'\xef\xbb\xbfy_true,cat,dog\r\ncat,0.8,0.2\r\n"dog", 0.3 ,0.7\r\n\r\n'
    )
    pred = readers.read_predictions(path)
    assert pred.classes == ["cat", "dog"] and pred.y.tolist() == [0, 1]
    np.testing.assert_array_equal(pred.scores, [[0.8, 0.2], [0.3, 0.7]])


def test_structured_npy_with_byte_string_labels(tmp_path):
    table = np.array(
        [(b"cat", 0.8, 0.2), (b"dog", 0.3, 0.7)],
        dtype=[("y_true", "S3"), ("cat", "f8"), ("dog", "f8")],
    )
    path = tmp_path / "t.npy"
    np.save(path, table)
    assert readers.read_predictions(path).y.tolist() == [0, 1]


def test_the_old_module_path_still_works_with_a_warning():
    from sklcalib.cli import readers as old

    with pytest.warns(FutureWarning, match=r"moved to sklcalib\.io\.read_predictions"):
        function = old.read_predictions
    assert function is readers.read_predictions
    with pytest.raises(AttributeError):
        old.no_such_name  # noqa: B018
