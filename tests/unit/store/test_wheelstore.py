"""The shared wheel store's pure parts (harness.store.wheelstore): which sdists a dry run's report
asks to build, what an install took from the store, the package's static requirements, the
store's paths, and publishing a build's output (real files; no pip, no docker: those are
tests/integration/test_wheel_store.py)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from harness.core.model import InterpreterInfo, JobResult
from harness.core.stored import StoredWheel, store_root
from harness.parse.pipreport import parse_pip_report
from harness.store import wheelstore
from harness.store.wheelstore import Sdist
from harness.testsetup.sdistfiles import SdistFiles

SHA = "49b3a825280bd66b3aa83585ef59c4a8c82f2c8a522dbe754a8bc8d08c85c491"
URL = (
    "https://files.pythonhosted.org/packages/a2/55/8f8cab2afd404cf578136ef2cc5dfb50baa1761b68c9da1fb1e4eed343c9/"
    "docopt-0.6.2.tar.gz"
)
KEY = "cpython-3.13.5-ft-aa8650c37ad2"


def _item(name: str, version: str, url: str, sha: str | None = SHA, **extra) -> dict:
    info: dict = {"url": url, **extra}
    if sha is not None:
        info["archive_info"] = {"hashes": {"sha256": sha}, "hash": f"sha256={sha}"}
    return {"metadata": {"name": name, "version": version}, "download_info": info}


def _report(*items: dict) -> bytes:
    return json.dumps({"version": "1", "install": list(items)}).encode()


def test_the_sdists_of_a_dry_run_are_the_https_archives_with_a_sha256() -> None:
    raw = _report(
        # as pip 26's --dry-run --report wrote it for `docopt==0.6.2 six` on this machine
        _item("docopt", "0.6.2", URL),
        _item("six", "1.17.0", "https://files.pythonhosted.org/x/six-1.17.0-py2.py3-none-any.whl", "a" * 64),
        _item("Mark_Up", "3.0", "https://example.org/f/Mark_Up-3.0.zip#sha256=" + "b" * 64, "b" * 64),
        _item("local", "1.0", "file:///work/src/pkg", None, dir_info={}),
        _item("nohash", "1.0", "https://example.org/nohash-1.0.tar.gz", None),
        _item("plainhttp", "1.0", "http://example.org/plainhttp-1.0.tar.gz", "c" * 64),
        _item("fromfile", "1.0", "file:///opt/pypi/files/fromfile-1.0.tar.gz", "d" * 64),
        _item("pkg-under-test", "2.0", "https://example.org/pkg_under_test-2.0.tar.gz", "e" * 64),
        _item("docopt", "0.6.2", URL),  # the same sdist twice: once
    )
    got = wheelstore.to_build(parse_pip_report(raw), skip="Pkg_Under_Test")
    assert got == [
        Sdist(name="docopt", version="0.6.2", url=URL, sha256=SHA),
        Sdist(name="mark-up", version="3.0", url="https://example.org/f/Mark_Up-3.0.zip", sha256="b" * 64),
    ]


@pytest.mark.parametrize(
    "raw",
    [
        None,
        b"",
        b"not json",
        b"[]",
        b'{"install": {}}',
        b'{"install": [1, {"metadata": 2}, {"metadata": {"name": 3}}]}',
        _report(_item("x", "1", URL, "XYZ")),
    ],
)
def test_a_report_package_code_could_have_written_reads_as_nothing_to_build(raw) -> None:
    assert wheelstore.to_build(parse_pip_report(raw)) == []


def test_what_an_install_took_from_the_store() -> None:
    wheel = f"file:///cache/wheels/{KEY}/{SHA}/docopt-0.6.2-py2.py3-none-any.whl"
    raw = _report(
        _item("docopt", "0.6.2", wheel, "f" * 64),
        _item("six", "1.17.0", URL),
        _item("other", "1.0", f"file:///cache/wheels/another-key/{SHA}/other-1.0-py3-none-any.whl"),
        _item("deeper", "1.0", f"file:///cache/wheels/{KEY}/{SHA}/sub/deeper-1.0-py3-none-any.whl"),
    )
    assert wheelstore.from_store(parse_pip_report(raw), "/cache/wheels", KEY) == [
        StoredWheel(name="docopt", version="0.6.2", sdist_sha256=SHA, wheel="docopt-0.6.2-py2.py3-none-any.whl")
    ]


def _static(tree: Path) -> list[str] | None:
    """static_requirements of the tree's PKG-INFO and pyproject.toml as the suite setup reads them."""
    files = SdistFiles.read(tree)
    return wheelstore.static_requirements(files.raw("PKG-INFO"), files.toml("pyproject.toml", []))


def test_the_package_s_requirements_when_its_sdist_states_them(tmp_path: Path) -> None:
    (tmp_path / "PKG-INFO").write_text(
        "Metadata-Version: 2.4\nName: a\nVersion: 1\n"
        "Requires-Dist: docopt==0.6.2\nRequires-Dist: pytest; extra == 'test'\n"
    )
    assert _static(tmp_path) == ["docopt==0.6.2", "pytest; extra == 'test'"]
    (tmp_path / "PKG-INFO").write_text("Metadata-Version: 2.2\nName: a\nVersion: 1\nDynamic: Requires-Dist\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "a"\ndependencies = ["six"]\n')
    assert _static(tmp_path) == ["six"]  # PKG-INFO says dynamic: pyproject's
    (tmp_path / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: a\nVersion: 1\nRequires-Dist: x\n")
    assert _static(tmp_path) == ["six"]  # before 2.2 nothing in PKG-INFO is static
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "a"\ndynamic = ["dependencies"]\n')
    assert _static(tmp_path) is None
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "a"\n')
    assert _static(tmp_path) == []  # stated: none
    (tmp_path / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\n')
    assert _static(tmp_path) is None  # setup.py's install_requires: pip asks it
    (tmp_path / "pyproject.toml").write_text("not [toml")
    assert _static(tmp_path) is None


def test_the_build_command_names_the_exact_file_and_its_hash() -> None:
    sd = Sdist(name="docopt", version="0.6.2", url=URL, sha256=SHA)
    assert wheelstore.build_argv("/py", sd, "/out") == [
        "/py",
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-cache-dir",
        "--wheel-dir",
        "/out",
        f"docopt @ {URL}#sha256={SHA}",
    ]


def test_store_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FT_HARNESS_WHEEL_STORE", raising=False)
    assert store_root(tmp_path, "docker") == tmp_path / "wheels" / "docker"  # one per backend (#46)
    monkeypatch.setenv("FT_HARNESS_WHEEL_STORE", str(tmp_path / "elsewhere"))
    assert store_root(tmp_path, "docker") == tmp_path / "elsewhere" / "docker"
    assert wheelstore.entry(tmp_path, KEY, SHA) == tmp_path / KEY / SHA
    for key, sha in [("../x", SHA), (KEY, "../" + SHA[3:]), (KEY, SHA.upper()), ("", SHA)]:
        with pytest.raises(ValueError):
            wheelstore.entry(tmp_path, key, sha)


def _built(tmp_path: Path, *files: str) -> Path:
    out = wheelstore.scratch(tmp_path / "store", KEY)
    for f in files:
        (out / f).write_bytes(f"wheel {f}".encode())
    return out


DOCOPT = Sdist(name="docopt", version="0.6.2", url=URL, sha256=SHA)
WHEEL = "docopt-0.6.2-py2.py3-none-any.whl"


def test_publish_takes_the_one_wheel_of_the_project_and_makes_it_read_only(tmp_path: Path) -> None:
    store = tmp_path / "store"
    out = _built(tmp_path, WHEEL, "numpy-2.0-cp313-cp313t-linux_x86_64.whl", "notes.txt")
    (out / "docopt-0.6.2-py3-none-any.whl").symlink_to(tmp_path / "elsewhere.whl")  # a link: not taken
    got, why = wheelstore.publish(out, store, KEY, DOCOPT)
    assert (got, why) == (DOCOPT.stored(WHEEL), "")
    entry = store / KEY / SHA
    assert os.listdir(entry) == [WHEEL] and (entry / WHEEL).read_bytes() == f"wheel {WHEEL}".encode()
    assert (entry.stat().st_mode & 0o777, (entry / WHEEL).stat().st_mode & 0o777) == (0o555, 0o444)
    assert wheelstore.stored(store, KEY, SHA) == WHEEL
    assert [p.name for p in (store / KEY).iterdir() if p.name.startswith(".tmp-")] == []


@pytest.mark.parametrize(
    "files",
    [
        (),
        ("numpy-2.0-cp313-cp313t-linux_x86_64.whl",),
        ("docopt-0.6.3-py3-none-any.whl",),
        (WHEEL, "docopt-0.6.2-py3-none-any.whl"),
    ],
)
def test_publish_stores_nothing_unless_exactly_one_wheel_fits(tmp_path: Path, files) -> None:
    got, why = wheelstore.publish(_built(tmp_path, *files), tmp_path / "store", KEY, DOCOPT)
    assert got is None and "wheels of docopt 0.6.2" in why
    assert wheelstore.stored(tmp_path / "store", KEY, SHA) == ""


def test_the_second_of_two_builds_keeps_the_first_s_wheel(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first, _ = wheelstore.publish(_built(tmp_path, WHEEL), store, KEY, DOCOPT)
    out = _built(tmp_path, WHEEL)
    (out / WHEEL).write_bytes(b"another build")
    second, why = wheelstore.publish(out, store, KEY, DOCOPT)
    assert first == second == DOCOPT.stored(WHEEL) and why == ""
    assert (store / KEY / SHA / WHEEL).read_bytes() == f"wheel {WHEEL}".encode()


def test_an_incomplete_entry_is_not_a_stored_wheel(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / KEY / SHA).mkdir(parents=True)
    assert wheelstore.stored(store, KEY, SHA) == ""
    (store / KEY / SHA / WHEEL).symlink_to(tmp_path / "x")
    assert wheelstore.stored(store, KEY, SHA) == ""


def test_the_lock_makes_a_second_job_wait(tmp_path: Path) -> None:
    order: list[str] = []
    inside = threading.Event()

    def second() -> None:
        inside.wait()
        with wheelstore.lock(tmp_path, KEY, SHA):
            order.append("second")

    t = threading.Thread(target=second)
    t.start()
    with wheelstore.lock(tmp_path, KEY, SHA):
        inside.set()
        t.join(0.3)
        order.append("first")
    t.join(5)
    assert order == ["first", "second"]


def test_a_result_keeps_its_wheels_and_reads_a_wrong_type_as_none() -> None:
    w = DOCOPT.stored(WHEEL)
    d = JobResult(
        job_id="ft--a",
        key="k",
        package="a",
        interpreter=InterpreterInfo(name="ft", version="3.13.5", key=KEY),
        wheels_reused=(w,),
    ).to_dict()
    assert d["wheels_reused"] == [w.to_dict()] and d["wheels_built"] == []
    back = JobResult.from_dict(d)
    assert back.wheels_reused == (w,) and back.wheels_built == ()
    assert JobResult.from_dict({**d, "wheels_built": "x", "wheels_reused": [1, {"name": 2}]}).wheels_reused == (
        StoredWheel(name="", version="", sdist_sha256="", wheel=""),
    )


def test_the_plan_is_offered_the_complete_entries_of_its_build_environment(tmp_path: Path) -> None:
    """The dry run gets ``--find-links`` of the complete entries (a dependency stored before is
    read from its wheel, not built again for its metadata), most recently used first; an
    incomplete entry, another key's, or a name that is no sha256 is not offered."""
    from harness.backends.base import Workspace

    store = tmp_path / "store"
    wheelstore.publish(_built(tmp_path, WHEEL), store, KEY, DOCOPT)
    (store / KEY / ("f" * 64)).mkdir()  # incomplete: no wheel
    (store / KEY / "not-a-sha").mkdir()
    other = Sdist(name="docopt", version="0.6.2", url=DOCOPT.url, sha256="e" * 64)
    out = wheelstore.scratch(store, "another-key")
    (out / WHEEL).write_bytes(b"wheel")
    assert wheelstore.publish(out, store, "another-key", other)[0] is not None
    assert wheelstore.complete(store, KEY) == [SHA]
    assert wheelstore.complete(store, "missing") == [] and wheelstore.complete(store, KEY, most=0) == []
    # the key is the build environment: the image's tag on docker (interpreter + build deps)
    ws = Workspace(
        host_root=tmp_path,
        root="/work",
        python="/opt/python/bin/python3.13t",
        image="ft-harness/interp:cpython-3.13.5-ft-aa8650c37ad2-9708ac6f",
    )
    assert ws.build_env("cpython-3.13.5-ft-aa8650c37ad2") == "cpython-3.13.5-ft-aa8650c37ad2-9708ac6f"
    assert wheelstore.KEY_RE.fullmatch(ws.build_env("x"))
