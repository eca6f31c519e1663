"""The shared wheel store's #46 items: one store per backend (a docker run never reads what a
local run stored), a cap on the entries one job adds (``store_entries_per_job``) and on the
store's bytes (``store_bytes``: least recently used entries removed, or the new one refused).

The job's store steps (harness.job.wheelsteps.prepare) run on a scripted backend whose dry run
writes a plan as package code could forge it, and whose isolated builds leave a wheel of a
given size: real files, real locks, no pip, no docker (tests/integration/test_wheel_store.py)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.backends.base import Workspace
from harness.core.model import Exec
from harness.core.stored import store_root
from harness.job import wheelsteps
from harness.job.job import open_job
from harness.job.prebuild import StoreStep
from harness.store import storecap, toolslayer, wheelstore
from harness.store.wheelstore import Sdist
from tests.unit.job.test_job_stages import INFO, pypi_job
from tests.unit.store.loopindex import LoopIndex, file_entry

KEY = INFO.key
OLD = 1_600_000_000.0  # 2020: entries restored from last week's cache, not used by this run


def _sha(i: int | str) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()


def _sdist(i: int | str) -> Sdist:
    return Sdist(name=f"dep{i}", version="1.0", url=f"https://example.org/dep{i}-1.0.tar.gz", sha256=_sha(i))


@pytest.fixture(autouse=True)
def vouching(monkeypatch: pytest.MonkeyPatch):
    """The harness's index (loopback) lists every ``_sdist(i)``: these tests are of the store's
    bounds, with the provenance check passing (tests/unit/store/test_provenance.py: failing)."""

    def files(name: str) -> list[dict] | None:
        if name == "pkg":
            return [
                file_entry(
                    Sdist(name="pkg", version="1.0", url="https://example.org/pkg-1.0.tar.gz", sha256=_sha("pkg"))
                )
            ]
        return [file_entry(_sdist(name[3:]))] if name.startswith("dep") else None

    loop = LoopIndex(files)
    monkeypatch.setenv("FT_HARNESS_INDEX_URL", loop.url)
    wheelsteps._PAGES.clear()
    yield loop
    loop.close()


def _record_of(store: Path) -> dict:
    return json.loads(next(store.glob(f"{KEY}/*/provenance.json")).read_text())


def _plan(*sdists: Sdist) -> bytes:
    """A dry run's --report naming these sdists (written in the job's venv: package code can)."""
    return json.dumps(
        {
            "version": "1",
            "install": [
                {
                    "metadata": {"name": s.name, "version": s.version},
                    "download_info": {"url": s.url, "archive_info": {"hashes": {"sha256": s.sha256}}},
                }
                for s in sdists
            ],
        }
    ).encode()


@dataclass
class StoreBackend:
    """The Backend protocol with a wheel store: the dry run writes ``plan``; each isolated build
    leaves one wheel of its sdist, ``sizes[name]`` bytes (default 100), or a tools layer."""

    store: Path
    plan: bytes
    sizes: dict[str, int] = field(default_factory=dict)
    ran: list[str] = field(default_factory=list)
    name: str = "fake"
    base_path: str = "/usr/bin:/bin"

    def open(self, job_id: str, host_root: Path, python: str, source: str) -> Workspace:
        return Workspace(
            host_root=host_root, root=str(host_root), python=python, wheel_store="/cache/wheels", wheel_host=self.store
        )

    def run(
        self,
        ws: Workspace,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: str,
        timeout: float,
        log: Path,
        network: bool,
        idle: float = 0,
    ) -> Exec:
        self.ran.append(log.stem)
        if log.stem == wheelsteps.PLAN:
            (ws.host_root / "logs" / wheelstore.PLAN_REPORT).write_bytes(self.plan)
        return Exec(exit_code=0, duration=0.1)

    def isolated_out(self, out: Path) -> str:
        return str(out)

    def run_isolated(
        self, ws: Workspace, argv: list[str], *, env: dict[str, str], timeout: float, log: Path, out: Path
    ) -> Exec:
        self.ran.append(log.stem)
        if log.stem == toolslayer.PHASE:
            (out / "layer").mkdir()
            (out / "layer" / "pytest.py").write_bytes(b"t" * self.sizes.get("tools", 100))
            (out / "layer" / toolslayer.MARK).write_text("{}")
        else:
            name = argv[-1].split(" @ ")[0]
            (out / f"{name}-1.0-py3-none-any.whl").write_bytes(b"w" * self.sizes.get(name, 100))
        return Exec(exit_code=0, duration=0.1)

    def reproduce_command(self, ws: Workspace, command: str, *, network: bool) -> str:
        return command

    def close(self, ws: Workspace) -> None:
        return None

    def cancel(self) -> None:
        return None

    def healthy(self) -> bool:
        return True


def _prepare(
    tmp_path: Path,
    backend: StoreBackend,
    tools: tuple[str, ...] = (),
    *,
    env: str = "",
    own: str = "",
    build_own: bool = False,
    out: str = "out",
) -> tuple[wheelsteps.StoreUse, str]:
    """The store steps of pkg 1.0's job (with ``env`` as its CFLAGS; ``own``: the sha256 of its
    sdist as the host checked it; ``build_own``: as the store step asks them, #58): what they
    give the install, and the plan's log."""
    job = pypi_job("pkg", "==1.0")
    if env:
        job = replace(job, package=replace(job.package, env=(("CFLAGS", env),)))
    ctx = open_job(
        job,
        interp=INFO,
        python="/py",
        backend=backend,  # type: ignore[arg-type]
        out=tmp_path / out,
        progress=lambda job_id, step: None,
        tarball="",
    )
    try:
        use = wheelsteps.prepare(
            ctx,
            venv_sh="true",
            vpy="/v/bin/python",
            requirements=["dep", *tools],
            skip="pkg",
            tools=tools,
            own_sha256=own,
            own_version="1.0" if build_own else "",
            build_own=build_own,
        )
        return use, ctx.fs.read(f"logs/{wheelsteps.PLAN}.log", 1 << 20).decode()
    finally:
        ctx.fs.close()


def _stored(store: Path, *sdists: Sdist, size: int = 100, used: float = OLD) -> None:
    """Entries of an earlier run, last used at ``used``."""
    for sd in sdists:
        out = wheelstore.scratch(store, KEY)
        (out / f"{sd.name}-1.0-py3-none-any.whl").write_bytes(b"o" * size)
        assert wheelstore.publish(out, store, KEY, sd)[0] is not None
        shutil.rmtree(out)  # as the job's step does
        os.utime(wheelstore.entry(store, KEY, sd.sha256), (used, used))


# ------------------------------------------------------------------ keyed by backend


def test_each_backend_has_its_own_store_and_a_docker_run_never_reads_a_local_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness import backends
    from harness.core.progress import no_heartbeat
    from harness.interpreters import images

    monkeypatch.delenv("FT_HARNESS_WHEEL_STORE", raising=False)
    cache = tmp_path / "cache"
    fake_client = SimpleNamespace(volumes=SimpleNamespace(get=lambda name: None))
    monkeypatch.setattr(images, "docker_client", lambda: fake_client)
    opened = {
        name: backends.open_backend(
            name, [], cache=cache, run_id="r", say=lambda s: None, heartbeat=no_heartbeat
        ).backend
        for name in ("local", "docker")
    }
    ws = {name: b.open("job", tmp_path / name / "work", "/py", "") for name, b in opened.items()}
    assert ws["local"].wheel_host == cache / "wheels" / "local"
    assert ws["docker"].wheel_host == cache / "wheels" / "docker"
    assert opened["docker"]._mounts["job"][str(cache / "wheels" / "docker")] == {"bind": "/cache/wheels", "mode": "ro"}
    assert not any(str(cache / "wheels" / "local") in m for m in opened["docker"]._mounts["job"])

    # what a local run stored (its build ran on the host, unconfined) is not there for docker
    local, docker = ws["local"].wheel_host, ws["docker"].wheel_host
    assert local is not None and docker is not None
    _stored(local, _sdist(1))
    dig = toolslayer.digest(KEY, ["pytest"])
    layer = Path(toolslayer.where(local, KEY, dig))
    layer.mkdir(parents=True)
    (layer / toolslayer.MARK).write_text("{}")
    assert wheelstore.stored(local, KEY, _sha(1)) and toolslayer.ready(local, KEY, dig)
    assert wheelstore.stored(docker, KEY, _sha(1)) == "" and not toolslayer.ready(docker, KEY, dig)
    # nor is an entry of the layout before stores were per backend (<cache>/wheels/<key>/...)
    _stored(cache / "wheels", _sdist(2))
    assert wheelstore.stored(docker, KEY, _sha(2)) == "" and wheelstore.stored(local, KEY, _sha(2)) == ""


def test_the_store_root_is_per_backend_wherever_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FT_HARNESS_WHEEL_STORE", raising=False)
    assert store_root(tmp_path, "docker") == tmp_path / "wheels" / "docker"
    monkeypatch.setenv("FT_HARNESS_WHEEL_STORE", str(tmp_path / "elsewhere"))
    assert store_root(tmp_path, "local") == tmp_path / "elsewhere" / "local"
    with pytest.raises(ValueError):
        store_root(tmp_path, "fake")


# ------------------------------------------------------------------ entries one job adds


def test_a_forged_plan_adds_no_more_than_store_entries_per_job(tmp_path: Path) -> None:
    """A plan of 40 sdists (a dependency's build code rewrote wheel-plan.json): the job adds the
    default 32 entries -- its tools layer and 31 wheels -- and its install builds the other 9."""
    store = tmp_path / "store"
    sdists = [_sdist(i) for i in range(40)]
    backend = StoreBackend(store=store, plan=_plan(*sdists))
    use, log = _prepare(tmp_path, backend, tools=("pytest",))
    cap = storecap.limits.value("store_entries_per_job")
    assert cap == 32
    assert use.tools_layer.startswith("built ") and len(use.built) == cap - 1
    assert [r.split(":")[0] for r in use.refused] == [f"dep{i} 1.0" for i in range(31, 40)]
    assert sum(1 for r in backend.ran if r.startswith("wheel-dep")) == cap - 1  # the rest not even built
    assert len(use.find_links) == cap - 1 and all(f"/{sd.sha256}" not in " ".join(use.find_links) for sd in sdists[31:])
    assert len(storecap.entries(store)) == cap
    assert "dep39 1.0 not stored: limit store_entries_per_job (32) exceeded: this job added 32" in log


def test_entries_already_stored_do_not_count_and_the_limit_is_a_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FT_HARNESS_LIMIT_STORE_ENTRIES_PER_JOB", "2")
    store = tmp_path / "store"
    _stored(store, *[_sdist(i) for i in range(3)])
    use, _ = _prepare(tmp_path, StoreBackend(store=store, plan=_plan(*[_sdist(i) for i in range(6)])))
    assert len(use.found) == 3 and [w.name for w in use.built] == ["dep3", "dep4"]
    assert [r.split(":")[0] for r in use.refused] == ["dep5 1.0"] and len(use.find_links) == 5


# ------------------------------------------------------------------ the store's bytes


def test_past_store_bytes_the_least_recently_used_entries_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three entries of 3,000 bytes from earlier runs (a the oldest), each with its provenance
    record once checked; this job's plan takes a (used now: kept) and builds d, 4,000 bytes,
    against a limit of 12,000: b, now the least recently used, is removed; c stays."""
    monkeypatch.setenv("FT_HARNESS_LIMIT_STORE_BYTES", "12000")
    store = tmp_path / "store"
    for i, used in (("a", OLD), ("b", OLD + 10), ("c", OLD + 20)):
        _stored(store, _sdist(i), size=3000, used=used)
    backend = StoreBackend(store=store, plan=_plan(_sdist("a"), _sdist("d")), sizes={"depd": 4000})
    use, log = _prepare(tmp_path, backend)
    assert [w.name for w in use.found] == ["depa"] and [w.name for w in use.built] == ["depd"]
    assert wheelstore.stored(store, KEY, _sha("b")) == ""
    assert all(wheelstore.stored(store, KEY, _sha(i)) for i in "acd")
    records = sum(p.stat().st_size for p in store.glob(f"{KEY}/*/provenance.json"))
    assert len(list(store.glob(f"{KEY}/*/provenance.json"))) == 3 and storecap.tree_bytes(store) == 10000 + records
    b = 3000 + len(json.dumps(_record_of(store)).encode())  # its wheel and its record (adopted when offered)
    assert len(use.evicted) == 1 and use.evicted[0].startswith(f"{KEY}/{_sha('b')} (")
    assert 3000 < int(use.evicted[0].split("(")[1].split(" ")[0]) < b + 100 and "last used 2020-09-13" in use.evicted[0]
    assert f"wheel store: removed {KEY}/{_sha('b')}" in log and use.refused == ()
    assert not [p for p in store.iterdir() if p.name.startswith(".evict-")]


def test_an_entry_that_cannot_fit_is_not_stored_and_nothing_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FT_HARNESS_LIMIT_STORE_BYTES", "5000")
    store = tmp_path / "store"
    _stored(store, _sdist("a"), size=3000)
    backend = StoreBackend(store=store, plan=_plan(_sdist("big")), sizes={"depbig": 6000})
    use, log = _prepare(tmp_path, backend)
    assert use.built == () and use.find_links == () and use.evicted == ()
    assert wheelstore.stored(store, KEY, _sha("a")) and wheelstore.stored(store, KEY, _sha("big")) == ""
    assert use.refused and "limit store_bytes (5000) exceeded" in use.refused[0]
    assert "depbig 1.0 not stored: limit store_bytes (5000) exceeded" in log
    assert "the install builds it itself" in log


def test_entries_this_run_used_or_a_job_holds_are_never_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FT_HARNESS_LIMIT_STORE_BYTES", "1000")
    store = tmp_path / "store"
    _stored(store, _sdist("a"), size=400, used=OLD)  # held by a job: skipped
    _stored(store, _sdist("b"), size=400, used=OLD + 1)
    _stored(store, _sdist("c"), size=400, used=time.time() + 5)  # used by this run
    room = storecap.Room(root=store)
    with wheelstore.lock(store, KEY, _sha("a")):
        assert room(200) == ""
    assert [r.split(" ")[0] for r in room.removed] == [f"{KEY}/{_sha('b')}"]
    assert wheelstore.stored(store, KEY, _sha("a")) and wheelstore.stored(store, KEY, _sha("c"))
    assert "limit store_bytes (1000) exceeded" in storecap.Room(root=store)(700)  # only a could go: too little
    assert wheelstore.stored(store, KEY, _sha("a"))


def test_what_a_killed_build_left_goes_once_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build's scratch dir is not an entry (not counted: the wheel being published is in it);
    one untouched for a day was left by a killed run, and goes."""
    monkeypatch.setenv("FT_HARNESS_LIMIT_STORE_BYTES", "1000")
    store = tmp_path / "store"
    _stored(store, _sdist("a"), size=600, used=time.time() + 5)
    stale, fresh = wheelstore.scratch(store, KEY), wheelstore.scratch(store, KEY)
    (stale / "half.whl").write_bytes(b"x" * 600)
    (fresh / "building.whl").write_bytes(b"x" * 600)  # a build going on now: kept
    os.utime(stale, (OLD, OLD))
    room = storecap.Room(root=store)
    assert room(400) == "" and not stale.exists() and fresh.exists()
    assert room.removed == [f"{KEY}/{stale.name} (600 bytes, left by a killed build)"]
    assert "limit store_bytes (1000) exceeded: the store holds 600 bytes, this entry is 500" in room(500)


def test_the_tools_layer_counts_toward_the_bytes_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FT_HARNESS_LIMIT_STORE_BYTES", "1000")
    store = tmp_path / "store"
    backend = StoreBackend(store=store, plan=_plan(), sizes={"tools": 5000})
    use, log = _prepare(tmp_path, backend, tools=("pytest",))
    assert use.tools_layer == "" and "limit store_bytes (1000) exceeded" in log
    assert use.refused and use.refused[0].startswith("tools layer ")
    assert storecap.entries(store) == []


def test_the_store_step_s_record_says_the_bounds_and_what_they_did() -> None:
    d = StoreStep(
        evicted=("j1: k/s (3000 bytes, last used 2020-09-13 12:26 UTC)",),
        refused=("j2: numpy 2.5.5: limit store_bytes (…) exceeded",),
    ).to_dict()
    assert d["bounds"] == {
        "store_entries_per_job": 32,
        "store_bytes": 4 << 30,
        "store_bytes_per_job": 1 << 30,
        "store_seconds_per_job": 3600,
        "store_seconds_per_run": 3 * 3600,
        "policy": storecap.POLICY,
    }
    assert "least recently used" in d["bounds"]["policy"] and "not stored" in d["bounds"]["policy"]
    assert d["evicted"] == ["j1: k/s (3000 bytes, last used 2020-09-13 12:26 UTC)"]
    assert d["refused"] == ["j2: numpy 2.5.5: limit store_bytes (…) exceeded"]


# ------------------------------------------------------------------ the package itself


def _prepare_own(tmp_path: Path, store: Path, own: str, env: str = "") -> tuple[wheelsteps.StoreUse, str]:
    return _prepare(tmp_path, StoreBackend(store=store, plan=_plan(_sdist(1))), env=env, own=own)


def test_the_package_itself_is_taken_from_the_store_when_another_job_built_its_sdist(tmp_path: Path) -> None:
    """scipy's job after scikit-learn's plan stored scipy: the install gets the store's dir of
    scipy's own sdist (the one the host checked), and does not build scipy again."""
    store = tmp_path / "store"
    own = Sdist(name="pkg", version="1.0", url="https://example.org/pkg-1.0.tar.gz", sha256=_sha("pkg"))
    _stored(store, own)
    use, log = _prepare_own(tmp_path, store, own.sha256)
    assert f"/cache/wheels/{KEY}/{own.sha256}" in use.find_links
    assert [w.wheel for w in use.found] == ["pkg-1.0-py3-none-any.whl"]
    assert f"the package itself from pkg-1.0-py3-none-any.whl (its sdist, sha256 {own.sha256}" in log
    assert os.stat(wheelstore.entry(store, KEY, own.sha256)).st_mtime > OLD  # used now


def test_the_package_is_built_by_its_install_when_its_sdist_is_not_stored_or_it_sets_an_env(tmp_path: Path) -> None:
    """Another release's sdist, an sdist the host did not check (pip fetched it), or a package
    with an ``env`` of its own (CFLAGS: a stored build never has it): the install builds it."""
    store = tmp_path / "store"
    own = Sdist(name="pkg", version="1.0", url="https://example.org/pkg-1.0.tar.gz", sha256=_sha("pkg"))
    _stored(store, own)
    for sha, env in ((_sha("another release"), ""), ("", ""), (own.sha256, "-O0")):
        use, log = _prepare_own(tmp_path / (sha[:6] + env), store, sha, env=env)
        assert f"/{own.sha256}" not in " ".join(use.find_links) and "the package itself" not in log
        assert "pkg" not in [w.name for w in use.found] and f"/{_sdist(1).sha256}" in " ".join(use.find_links)
