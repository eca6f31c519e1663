"""benchmarks/sweep.py: one sdist's host steps, and the summary the sweep prints."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from benchmarks.sweep import _found, _pct, host_steps, lines, summarize


def _sdist(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"pkg-1.0/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def test_host_steps_of_one_sdist(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    a = _sdist(
        tmp_path / "cache" / "pkg-1.0.tar.gz",
        {
            "pyproject.toml": '[project]\nname = "pkg"\n[dependency-groups]\ntest = "pytest"\n'
            '[tool.pytest.ini_options]\naddopts = "--cov=pkg"\n',
            "tests/test_a.py": "def test(): pass\n",
        },
    )
    row = host_steps("pkg", a, tmp_path)
    assert "exception" not in row and "fetch_error" not in row
    assert row["setup"]["tests"] == "tests" and row["has_tests"] and row["own_config"]
    assert set(_found(row["setup"])) == {
        "tests dir found",
        "pytest addopts neutralized",
        "a value of the wrong type (noted)",
    }
    broken = tmp_path / "cache" / "bad-1.0.tar.gz"
    broken.write_bytes(b"\x1f\x8b not gzip")
    bad = host_steps("bad", broken, tmp_path)
    assert "exception" not in bad and bad["extract_error"]
    d = summarize([row, bad], {"pkg": {"file": a.name}, "bad": {"file": broken.name}, "none": {"no_sdist": "x"}})
    assert d["exceptions"] == 0 and d["sdists"] == 2 and d["no_sdist"] == 1
    assert d["found"]["extraction refused"] == 1 and d["found"]["tests dir found"] == 1
    assert "exceptions: **0**" in "\n".join(lines(d))


def test_pct() -> None:
    vals = [float(i) for i in range(1, 101)]
    assert _pct(vals, 0.99) == 99.0 and _pct(vals, 0.5) in (50.0, 51.0) and _pct([], 0.99) == 0.0
