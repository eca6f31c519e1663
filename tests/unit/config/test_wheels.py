"""The wheel column, read from pip --report JSON captured from real installs (tests/data/real)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import wheels
from harness.core.model import InterpreterInfo
from harness.parse.pipreport import parse_pip_report

REAL = Path(__file__).resolve().parents[2] / "data" / "real"
INTERP = InterpreterInfo(name="cpython3.13t", version="3.13.5", key="k")


@pytest.mark.parametrize(
    ("pkg", "file"),
    [
        ("msgpack", "msgpack-1.2.4.tar.gz"),  # no cp313t wheel: pip built it from the sdist
        ("six", "six-1.17.0-py2.py3-none-any.whl"),
    ],
)
def test_installed_from_real_reports(pkg, file):
    report = parse_pip_report((REAL / pkg / "install-report.json").read_bytes())
    assert wheels.installed_from(report, pkg) == file
    assert wheels.installed_from(report, "not-installed-here") == ""


def test_classify_wheel_tags():
    fl = wheels.installed_from(
        parse_pip_report((REAL / "frozenlist" / "install-report.json").read_bytes()), "frozenlist"
    )
    assert wheels.classify_wheel(fl, "3.13.5", "x86_64") == "free-threaded"
    assert wheels.classify_wheel(fl, "3.13.5", "aarch64") == "other-platform"
    assert wheels.classify_wheel("six-1.17.0-py2.py3-none-any.whl", "3.13.5") == "pure"
    assert wheels.classify_wheel("m-1-cp313-cp313-manylinux_2_28_x86_64.whl", "3.13.5", "x86_64") == "gil-only"
    assert wheels.classify_wheel("garbage.whl", "3.13.5") == "other-platform"
    assert wheels.availability(["m-1.tar.gz"], "3.13.5") == "sdist-only"


@pytest.mark.parametrize(("ok", "how"), [(True, "local source"), (False, "not installed")])
def test_a_failed_install_is_not_installed(ok, how):
    # a local package (no index lookup); pip may leave a report behind and still fail the build
    report = parse_pip_report((REAL / "msgpack" / "install-report.json").read_bytes())
    info = wheels.wheel_info(
        "msgpack", local=True, version="1.2.4", install_report=report, interp=INTERP, installed_ok=ok
    )
    assert info.installed == how and info.available == "n/a"
