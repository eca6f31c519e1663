"""pip's --report, parsed once onto the install phase that wrote it (harness.parse.pipreport,
harness.core.pipinstalled), and read from there by the fallback, the wheel column and the store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.core.model import Phase
from harness.core.pipinstalled import PipItem, PipReport
from harness.parse import parse_phase
from harness.parse.pipreport import parse_pip_report, report_file
from harness.verdict import artifact

DATA = Path(__file__).resolve().parents[2] / "data" / "artifact"


def test_a_real_report_as_its_items() -> None:
    report = parse_pip_report((DATA / "propcache-0.5.4-install-report.json").read_bytes())
    item = report.item("PropCache")
    assert item is not None and (item.name, item.version, item.file) == (
        "propcache",
        "0.5.4",
        "propcache-0.5.4-py3-none-any.whl",
    )
    assert item.is_wheel and item.url.startswith("https://files.pythonhosted.org/")
    assert report.item("not-installed-here") is None


@pytest.mark.parametrize(
    "raw",
    [
        None,
        b"",
        b"not json",
        b"[]",
        b'{"install": 3}',
        b"[" * 100_000,
        b'{"install": [1, {"metadata": 2}, {"metadata": {"name": 3}}]}',
    ],
)
def test_a_report_of_any_shape_reads_as_no_items(raw: bytes | None) -> None:
    assert parse_pip_report(raw) == PipReport()


def test_each_field_of_another_type_is_left_out() -> None:
    item = {
        "metadata": {"name": "A_B", "version": 1},
        "download_info": {"url": ["x"], "archive_info": {"hashes": {"sha256": "XYZ"}}},
    }
    assert PipReport.from_dict({"install": [item]}).items == (PipItem(name="a-b"),)
    assert PipItem(name="a-b").file == "" and not PipItem(name="a-b").is_wheel
    item["download_info"] = {
        "url": "https://h/a%20b-1.tar.gz#sha256=x",
        "archive_info": {"hashes": {"sha256": "e" * 64}},
    }
    (read,) = PipReport.from_dict({"install": [item]}).items
    assert (read.url, read.sha256, read.file) == ("https://h/a%20b-1.tar.gz#sha256=x", "e" * 64, "a b-1.tar.gz")


def test_the_install_phases_report_is_parsed_onto_it_and_not_kept_in_the_result(tmp_path: Path) -> None:
    logs = tmp_path / "work" / "j" / "logs"
    logs.mkdir(parents=True)
    for name in ("install", artifact.REBUILD):
        (logs / f"{name}.log").write_text("$ pip install\n")
    shutil.copyfile(DATA / "propcache-0.5.4-install-report.json", logs / "install-report.json")
    shutil.copyfile(DATA / "propcache-0.5.4-install-sdist-report.json", logs / artifact.REBUILD_REPORT)
    (logs / "test-deps.log").write_text("")
    (logs / "test-deps-report.json").write_text("{}")
    install, rebuild, deps, fetch = (
        parse_phase(Phase(name=n, kind=k, exit_code=0, log=f"work/j/logs/{n}.log"), tmp_path)
        for n, k in (
            ("install", "install"),
            (artifact.REBUILD, "install"),
            ("test-deps", "setup"),
            ("fetch", "install"),
        )
    )
    assert report_file(rebuild.log).endswith(artifact.REBUILD_REPORT)  # where its script has pip write it
    assert install.pip_report is not None and rebuild.pip_report is not None
    assert artifact.fallback_wheel(install.pip_report, "propcache") == "propcache-0.5.4-py3-none-any.whl"
    assert artifact.tested_report([install]) is install.pip_report
    assert artifact.tested_report([install, rebuild]) is rebuild.pip_report  # built over the fallback
    assert deps.pip_report is None and fetch.pip_report is None  # not an install, or no report written
    d = install.to_dict()
    assert "pip_report" not in d and Phase.from_dict(json.loads(json.dumps(d))) == install
