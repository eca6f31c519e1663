"""The interpreter side: everything version-specific comes from the interpreter itself.

Captured 3.14/3.15 text is under tests/data/real/py314 and py315 (their READMEs say where each
file comes from: none was produced by a 3.14/3.15 interpreter here).  The 3.13 builds in the
cache and the system's GIL python are run where they exist.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.config import matrix, wheels
from harness.core.errors import BuildError, ConfigError
from harness.core.model import InterpreterInfo
from harness.interpreters import interpreters, pycheck
from harness.parse import gil

REAL = Path(__file__).resolve().parents[2] / "data" / "real"
CACHE = interpreters.cache_root()
BUILT_3135 = CACHE / "interpreters" / "cpython-3.13.5-ft-aa8650c37ad2" / "bin" / "python3.13t"
GIL_PYTHON = Path("/usr/bin/python3")


def facts(version: str) -> dict:
    return json.loads((REAL / f"py{version.replace('.', '')}" / "check.json").read_text())


def entry(version: str = "", source: str = "debian:trixie", **kw) -> matrix.Interpreter:
    text = f"interpreters:\n  - name: ft\n    source: {json.dumps(source)}\n"
    if version:
        text += f"    version: {json.dumps(version)}\n"
    for k, v in kw.items():
        text += f"    {k}: {v}\n"
    return matrix.loads(text + "packages: [{name: six}]\n", file="m.yaml").interpreters[0]


def info(version: str) -> InterpreterInfo:
    return pycheck.info_from_facts(entry(f"{version}.0"), key="k", python="/p", facts=facts(version))


# ------------------------------------------------------------------ -VV


@pytest.mark.parametrize(("version", "build"), [("3.14", "free-threading"), ("3.15", "free-threading")])
def test_vv_of_captured_314_315(version, build):
    vv = (REAL / f"py{version.replace('.', '')}" / "vv.txt").read_text().strip()
    assert vv.startswith(f"Python {version}.0 free-threading build (")
    assert pycheck.vv_build(vv) == build
    m = pycheck.VV_RE.match(vv)
    assert m and m.group("version") == f"{version}.0"


def test_vv_of_313_and_gil_builds():
    real_313 = "Python 3.13.5 experimental free-threading build (main, Dec  3 2026, 18:04:15) [GCC 12.2.0]"
    assert pycheck.vv_build(real_313) == "experimental free-threading"
    assert pycheck.vv_build("Python 3.11.2 (main, Apr 28 2025, 14:11:48) [GCC 12.2.0]") == ""
    assert pycheck.vv_build("Python 3.14.0") == ""  # -V, not -VV: says nothing


# ------------------------------------------------------------------ sysconfig values, the check


@pytest.mark.parametrize("version", ["3.14", "3.15"])
def test_captured_facts_pass_the_check(version):
    f = facts(version)
    assert pycheck.check_facts(f, entry(f"{version}.0"), "x") == ""
    assert pycheck.check_facts(f, entry(version, source="python:python3"), "x") == ""  # 3.14 = any 3.14.x
    assert "the matrix asks for" in pycheck.check_facts(f, entry(f"{version}.1"), "x")


@pytest.mark.parametrize(
    ("value", "ok"), [(1, True), ("1", False), ("0", False), (0, False), (True, False), (None, False)]
)
def test_py_gil_disabled_must_be_the_int_1(value, ok):
    f = {**facts("3.14"), "Py_GIL_DISABLED": value}
    problem = pycheck.check_facts(f, entry("3.14.0"), "x")
    assert (problem == "") is ok
    if not ok:
        assert problem.startswith(f"x is not a free-threaded build (Py_GIL_DISABLED={value!r}; Python 3.14.0 ")


def test_check_catches_gil_on_vv_and_tsan():
    f = facts("3.14")
    assert "kept the GIL enabled" in pycheck.check_facts({**f, "gil_enabled": True}, entry("3.14.0"), "x")
    gil_vv = {**f, "vv": "Python 3.14.0 (main, Oct  8 2025, 09:33:34) [GCC 13.3.0]"}
    assert "says no free-threading build" in pycheck.check_facts(gil_vv, entry("3.14.0"), "x")
    tsan = entry("3.14.0", sanitizer="thread")
    assert "CFLAGS lacks -fsanitize=thread" in pycheck.check_facts(f, tsan, "x")
    both = {**f, "CFLAGS": f["CFLAGS"] + " -fsanitize=thread"}
    assert "LDSHARED lacks -fsanitize=thread" in pycheck.check_facts(both, tsan, "x")
    both["LDSHARED"] += " -fsanitize=thread"
    assert pycheck.check_facts(both, tsan, "x") == ""


def test_info_from_captured_facts():
    i314, i315 = info("3.14"), info("3.15")
    assert (i314.python_name, i314.bin_relpath, i314.soabi) == (
        "python3.14t",
        "bin/python3.14t",
        "cpython-314t-x86_64-linux-gnu",
    )
    assert i314.flags == {"thread_inherit_context": 1, "context_aware_warnings": 1}
    assert i314.tag_pairs[0] == "cp314-cp314t" and "cp314-abi3" not in i314.tag_pairs
    assert i315.tag_pairs[:2] == ("cp315-cp315t", "cp315-abi3t")  # PEP 803
    assert "cp315-abi3" not in i315.tag_pairs and "py3-none" in i315.tag_pairs
    assert i315.vv.startswith("Python 3.15.0 free-threading build")
    assert pycheck.python_in("/opt/python", facts("3.15")) == "/opt/python/bin/python3.15t"
    back = InterpreterInfo.from_dict(json.loads(json.dumps(i315.to_dict())))
    assert back == i315
    old = InterpreterInfo.from_dict({"name": "a", "version": "3.13.5", "key": "k"})  # results of before
    assert (old.tag_pairs, old.flags, old.bin_relpath) == ((), {}, "")


def test_compact_tags_keeps_priority_order():
    pairs, platforms = pycheck.compact_tags(facts("3.15")["tags"])
    assert pairs[0] == "cp315-cp315t" and platforms[0] == "linux_x86_64"
    assert "any" not in platforms and len(set(pairs)) == len(pairs)


# ------------------------------------------------------------------ the GIL warning, 3.14 text


def test_gil_warning_with_its_314_line_number():
    text = (REAL / "py314" / "gil-warning.log").read_text()
    assert gil.gil_modules(text) == ["triton._C.libtriton", "_brotli"]
    lines = gil.warning_lines(text, "_brotli")
    assert len(lines) == 1 and lines[0].startswith("<frozen importlib._bootstrap>:491: RuntimeWarning")
    real_313 = (REAL / "markupsafe-2.1.5" / "probe.log").read_text()  # :488 on 3.13
    assert "_bootstrap>:488:" in real_313 and gil.gil_modules(real_313) == ["markupsafe._speedups"]


# ------------------------------------------------------------------ abi3t wheel names -> wheel column


CRYPTO = json.loads((REAL / "py315" / "index-files.json").read_text())["cryptography==50.0.2"]


def test_abi3t_wheels_are_free_threaded_on_315_only():
    i314, i315 = info("3.14"), info("3.15")
    abi3t = "cryptography-50.0.2-cp315-abi3.abi3t-manylinux_2_34_x86_64.whl"
    assert abi3t in CRYPTO
    assert wheels.classify_wheel(abi3t, interp=i315) == "free-threaded"
    assert wheels.classify_wheel(abi3t, interp=i314) == "gil-only"  # cp315 > 3.14
    assert (
        wheels.classify_wheel("cryptography-50.0.2-cp315-abi3.abi3t-macosx_11_0_arm64.whl", interp=i315)
        == "other-platform"
    )
    assert (
        wheels.classify_wheel("cryptography-50.0.2-cp311-abi3-manylinux_2_34_x86_64.whl", interp=i315) == "gil-only"
    )  # plain abi3: not loaded by 3.15t
    assert (
        wheels.classify_wheel("cryptography-50.0.2-cp314-cp314t-manylinux_2_34_x86_64.whl", interp=i314)
        == "free-threaded"
    )
    assert wheels.availability(CRYPTO, interp=i315) == "free-threaded"
    assert wheels.availability(CRYPTO, interp=i314) == "free-threaded"
    assert wheels.availability(CRYPTO, "3.13.5", "x86_64") == "gil-only"  # no cp313t wheel


def test_msgpack_has_wheels_for_314t_and_315t_not_313t():
    files = json.loads((REAL / "index" / "files.json").read_text())["msgpack==1.2.4"]
    assert wheels.availability(files, interp=info("3.14")) == "free-threaded"
    assert wheels.availability(files, interp=info("3.15")) == "free-threaded"
    assert wheels.availability(files, "3.13.5", "x86_64") == "gil-only"
    assert wheels.availability(files, "3.15.0", "x86_64") == "free-threaded"  # version fallback


# ------------------------------------------------------------------ debian suites


def test_debian_versions_from_real_showsrc():
    trixie = (REAL / "debian" / "showsrc-python3.13-trixie.txt").read_text()
    forky = (REAL / "debian" / "showsrc-python3.14-forky.txt").read_text()
    assert interpreters.shipped_versions(trixie, "python3.13") == ["3.13.5-2+deb13u5"]
    assert interpreters.shipped_versions(forky, "python3.14") == ["3.14.8-1"]
    assert interpreters.shipped_versions(forky, "python3.13") == []
    assert interpreters._debian_upstream("3.13.5-2+deb13u5") == "3.13.5"
    assert interpreters._debian_upstream("1:3.14.0~rc1-1") == "3.14.0rc1"


def test_installed_source_is_refused_by_the_image_builder(tmp_path):
    it = entry(source="python:python3.14t")
    with pytest.raises(
        ConfigError,
        match=r"^m.yaml:3: interpreters\[0\].source python:python3.14t is an "
        "interpreter installed on this machine",
    ):
        interpreters.fetch_source(it, tmp_path)


# ------------------------------------------------------------------ real interpreters here


needs_313 = pytest.mark.skipif(not BUILT_3135.exists(), reason=f"no 3.13.5 build at {BUILT_3135}")


@needs_313
def test_probe_real_313_build():
    f = pycheck.probe(BUILT_3135)
    assert f["Py_GIL_DISABLED"] == 1 and f["gil_enabled"] is False
    assert (f["version"], f["python_name"], f["LDVERSION"]) == ("3.13.5", "python3.13t", "3.13t")
    assert pycheck.vv_build(f["vv"]) == "experimental free-threading"
    assert f["flags"] == {}  # 3.13 has neither context flag
    pairs, _ = pycheck.compact_tags(f["tags"])
    assert pairs[0] == "cp313-cp313t"


@needs_313
def test_installed_free_threaded_interpreter_is_used_without_a_build(tmp_path):
    it = entry(source=f"python:{BUILT_3135}")
    built = interpreters.ensure_built(it, tmp_path)
    assert built.state == "installed" and built.source_tarball is None
    assert built.info.version == "3.13.5" and built.info.installed
    assert built.info.key.startswith("cpython-3.13.5-ft-installed-")
    assert built.info.source == f"python:{BUILT_3135}"
    assert not (tmp_path / "interpreters").exists()  # nothing was built or cached
    with pytest.raises(ConfigError, match=r"is CPython 3\.13\.5, the matrix asks for 3\.14"):
        interpreters.ensure_built(entry("3.14", source=f"python:{BUILT_3135}"), tmp_path)


@pytest.mark.skipif(not GIL_PYTHON.exists(), reason="no /usr/bin/python3")
def test_installed_gil_interpreter_is_a_one_line_config_error(tmp_path):
    with pytest.raises(ConfigError) as e:
        interpreters.ensure_built(entry(source=f"python:{GIL_PYTHON}"), tmp_path)
    text = str(e.value)
    assert e.value.return_code == 2 and "\n" not in text
    assert text.startswith(
        f"m.yaml:3: interpreters[0].source python:{GIL_PYTHON} is not a free-threaded build (Py_GIL_DISABLED="
    )


def test_installed_name_not_on_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(
        ConfigError,
        match=r"^m.yaml:3: interpreters\[0\].source python:python3.14t: "
        r"no 'python3.14t' on PATH$",
    ):
        interpreters.ensure_built(entry(source="python:python3.14t"), tmp_path)


def test_probe_of_something_that_is_not_python(tmp_path):
    with pytest.raises(BuildError, match="does not run the interpreter check"):
        pycheck.probe(shutil.which("true") or "/bin/true")
