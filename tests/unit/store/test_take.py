"""The store's one verb (harness.store.take.take_or_build, #56): provenance, the store's own time
and bytes, as a job's ``prepare`` meets them.

The job's steps run on the scripted backend of test_storecap (its dry run writes a plan as
package code could forge it; its isolated builds leave a wheel); the index is a real HTTP server
on the loopback interface that the harness's own index client reads (tests/unit/store/loopindex).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness.core.model import Exec
from harness.job import wheelsteps
from harness.parse.pipreport import parse_pip_report
from harness.store import provenance, storecap, take, wheelstore
from harness.store.wheelstore import BUILD_TIMEOUT, Sdist
from tests.unit.store.loopindex import LoopIndex
from tests.unit.store.test_storecap import KEY, StoreBackend, _plan, _prepare, _sha

DATA = Path(__file__).resolve().parents[2] / "data" / "store"

# numpy as the index has it (2.5.5, an sdist only for 3.13t) and as a hostile plan names it
NUMPY = Sdist(name="numpy", version="2.5.5", url="https://files.example.org/numpy-2.5.5.tar.gz", sha256=_sha("numpy"))
HIGHER = Sdist(name="numpy", version="99.0", url="https://evil.example/numpy-99.0.tar.gz", sha256=_sha("evil99"))
SAME = Sdist(name="numpy", version="2.5.5", url="https://evil.example/numpy-2.5.5.tar.gz", sha256=_sha("evil255"))


class Timed(StoreBackend):
    """The scripted backend, recording each step's limit."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.timeouts: dict[str, float] = {}

    def run(self, ws, argv, *, env, cwd, timeout, log, network, idle=0) -> Exec:  # type: ignore[override]
        self.timeouts[log.stem] = timeout
        return super().run(ws, argv, env=env, cwd=cwd, timeout=timeout, log=log, network=network, idle=idle)

    def run_isolated(self, ws, argv, *, env, timeout, log, out) -> Exec:  # type: ignore[override]
        self.timeouts[log.stem] = timeout
        if log.stem.startswith("wheel-"):  # the wheel of the sdist it was asked for, by its version
            self.ran.append(log.stem)
            name, _, url = argv[-1].partition(" @ ")
            version = url.split("#")[0].rsplit("-", 1)[1].removesuffix(".tar.gz")
            (out / f"{name}-{version}-py3-none-any.whl").write_bytes(b"w")
            return Exec(exit_code=0, duration=0.1)
        return super().run_isolated(ws, argv, env=env, timeout=timeout, log=log, out=out)


def _wheel_out(store: Path, sd: Sdist) -> Path:
    out = wheelstore.scratch(store, KEY)
    (out / f"{sd.name}-{sd.version}-py3-none-any.whl").write_bytes(b"w")
    return out


def test_a_direct_url_or_a_file_the_index_does_not_list_is_never_stored(tmp_path: Path, index: LoopIndex) -> None:
    """A hostile plan names numpy 99.0 from its own host and a second numpy 2.5.5 (another
    sha256): neither is built into the store (each a line of the plan's log); the index's own
    numpy 2.5.5 is built, from the URL the index lists, with its record."""
    index.vouch(NUMPY, url="http://127.0.0.1:1/files/numpy-2.5.5.tar.gz")  # the index's file URL
    store = tmp_path / "store"
    backend = Timed(store=store, plan=_plan(HIGHER, SAME, NUMPY))
    use, log = _prepare(tmp_path, backend)
    assert [w.version for w in use.built] == ["2.5.5"] and use.built[0].sdist_sha256 == NUMPY.sha256
    assert sorted(wheelstore.complete(store, KEY)) == [NUMPY.sha256]
    assert [u.split(":")[0] for u in use.untrusted] == ["numpy 99.0", "numpy 2.5.5"]
    assert (
        f"refused numpy 99.0 from {HIGHER.url} (sha256 {HIGHER.sha256}): the index lists no sdist of numpy 99.0" in log
    )
    assert f"refused numpy 2.5.5 from {SAME.url} (sha256 {SAME.sha256}): the index lists no sdist" in log
    assert use.find_links == (f"/cache/wheels/{KEY}/{NUMPY.sha256}",)
    record = provenance.read(wheelstore.entry(store, KEY, NUMPY.sha256))
    assert record is not None and record.index == index.url and record.asked_by == "cpython3.13t--pkg"
    assert (record.project, record.version, record.filename) == ("numpy", "2.5.5", "numpy-2.5.5.tar.gz")
    # the build downloaded the index's file, not the plan's URL
    build = (tmp_path / "out" / "work" / "cpython3.13t--pkg" / "logs" / "wheel-numpy-2.5.5.log").read_text()
    assert "numpy @ http://127.0.0.1:1/files/numpy-2.5.5.tar.gz#sha256=" in build and "evil" not in build


def test_a_url_the_plan_asked_for_directly_is_refused_even_from_the_index_s_host(
    tmp_path: Path, index: LoopIndex
) -> None:
    """pip's report (captured: ``docopt @ https://files.pythonhosted.org/.../docopt-0.6.2.tar.gz``)
    marks a URL requirement ``is_direct``: built by the job's install, never stored."""
    report = parse_pip_report((DATA / "direct-url-report.json").read_bytes())
    (sd,) = wheelstore.to_build(report)
    assert sd.direct and sd.name == "docopt"
    index.vouch(sd)
    use, log = _prepare(tmp_path, Timed(store=tmp_path / "store", plan=(DATA / "direct-url-report.json").read_bytes()))
    assert use.built == () and use.find_links == ()
    assert "refused docopt 0.6.2" in log and "asked for by URL, not from the index" in log


def test_an_entry_the_index_does_not_vouch_for_is_neither_offered_nor_taken(tmp_path: Path, index: LoopIndex) -> None:
    """Entries in the store that no record and no index listing back (what an older harness
    stored for a hostile plan; another index's): the dry run is not offered them, and a plan
    that says it took one from the store gets no --find-links of it."""
    store = tmp_path / "store"
    for sd in (HIGHER, SAME):
        assert wheelstore.publish(_wheel_out(store, sd), store, KEY, sd)[0] is not None
    other = provenance.Provenance(
        index="https://another.example/simple/",
        project="numpy",
        version="2.5.5",
        sdist_sha256=NUMPY.sha256,
        filename="numpy-2.5.5.tar.gz",
        url=NUMPY.url,
        build_env=KEY,
        asked_by="j",
    )
    assert wheelstore.publish(_wheel_out(store, NUMPY), store, KEY, NUMPY, record=other)[0] is not None
    index.vouch(NUMPY)
    taken = {
        "version": "1",
        "install": [
            {
                "metadata": {"name": "numpy", "version": sd.version},
                "download_info": {"url": f"file:///cache/wheels/{KEY}/{sd.sha256}/numpy-{sd.version}-py3-none-any.whl"},
            }
            for sd in (HIGHER, SAME, NUMPY)
        ],
    }
    use, log = _prepare(tmp_path, Timed(store=store, plan=json.dumps(taken).encode()))
    plan_cmd = log.splitlines()[0]
    assert "--find-links" not in plan_cmd
    assert use.find_links == () and use.found == ()
    assert "refused the stored numpy 99.0" in log and "the index lists no sdist of numpy 99.0" in log
    assert (
        "refused the stored numpy 2.5.5" in log and "stored for another index (https://another.example/simple/)" in log
    )


def test_an_entry_stored_before_records_were_kept_is_adopted_once_the_index_vouches(
    tmp_path: Path, index: LoopIndex
) -> None:
    store = tmp_path / "store"
    assert wheelstore.publish(_wheel_out(store, NUMPY), store, KEY, NUMPY)[0] is not None  # no record
    before = wheelstore.entry(store, KEY, NUMPY.sha256).stat().st_mtime
    index.vouch(NUMPY)
    use, log = _prepare(tmp_path, Timed(store=store, plan=_plan(NUMPY)))
    assert [w.sdist_sha256 for w in use.found] == [NUMPY.sha256] and f"/{NUMPY.sha256}" in use.find_links[0]
    record = provenance.read(wheelstore.entry(store, KEY, NUMPY.sha256))
    assert record is not None and record.asked_by == "cpython3.13t--pkg (adopted)"
    assert wheelstore.entry(store, KEY, NUMPY.sha256).stat().st_mtime >= before


def test_the_store_s_steps_run_to_its_own_limits_and_its_time_is_returned(
    tmp_path: Path, index: LoopIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each store step's limit is the least of BUILD_TIMEOUT and what is left of the job's and
    the run's store seconds, never the job's budget; the seconds spent come back as a value."""
    index.vouch(NUMPY)
    backend = Timed(store=tmp_path / "store", plan=_plan(NUMPY))
    monkeypatch.setattr(take, "RUN", take.RunClock())
    use, _ = _prepare(tmp_path, backend)
    assert BUILD_TIMEOUT - 5 < backend.timeouts[wheelsteps.PLAN] <= BUILD_TIMEOUT
    assert BUILD_TIMEOUT - 5 < backend.timeouts["wheel-numpy-2.5.5"] <= BUILD_TIMEOUT
    assert use.seconds >= 0 and use.limits == ()
    monkeypatch.setenv("FT_HARNESS_LIMIT_STORE_SECONDS_PER_JOB", "50")
    backend = Timed(store=tmp_path / "store2", plan=_plan(NUMPY))
    _prepare(tmp_path / "b", backend)
    assert 45 < backend.timeouts[wheelsteps.PLAN] <= 50 and backend.timeouts["wheel-numpy-2.5.5"] <= 50


def test_a_job_past_its_store_seconds_stores_nothing_more_and_says_which_limit(
    tmp_path: Path, index: LoopIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    index.vouch(NUMPY)
    clock = take.RunClock()
    clock.add(3 * 3600)  # the run's jobs spent the run's store seconds already
    monkeypatch.setattr(take, "RUN", clock)
    backend = Timed(store=tmp_path / "store", plan=_plan(NUMPY))
    use, log = _prepare(tmp_path, backend)
    assert not use.planned and use.built == () and backend.ran == []  # the install makes its venv itself
    assert use.limits and use.limits[0].startswith("limit store_seconds_per_run (10800) exceeded")
    assert "wheel store: no dry run: limit store_seconds_per_run" in log


def test_one_job_adds_at_most_store_bytes_per_job(
    tmp_path: Path, index: LoopIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hog's plan of big wheels: it stores what fits in its own bytes and no more, so it
    cannot evict every other package's entries; the limit is in its result."""
    monkeypatch.setenv("FT_HARNESS_LIMIT_STORE_BYTES_PER_JOB", "5000")
    big = [
        Sdist(name=f"hog{i}", version="1.0", url=f"https://x.example/hog{i}-1.0.tar.gz", sha256=_sha(f"hog{i}"))
        for i in range(3)
    ]
    index.vouch(*big)
    store = tmp_path / "store"
    backend = StoreBackend(store=store, plan=_plan(*big), sizes={f"hog{i}": 2000 for i in range(3)})
    use, log = _prepare(tmp_path, backend)
    assert [w.name for w in use.built] == ["hog0", "hog1"] and 4000 < use.bytes_added <= 5000
    assert use.limits == (
        "limit store_bytes_per_job (5000) exceeded: this job added "
        + str(use.bytes_added)
        + " bytes, this entry is 2000",
    )
    assert "hog2 1.0 not stored: limit store_bytes_per_job (5000)" in log
    assert len(storecap.entries(store)) == 2


def test_the_job_s_deadline_moves_by_the_store_s_time_once(tmp_path: Path) -> None:
    """JobCtx.deadline is the job's start + budget + the store's seconds (no rewrite in place)."""
    from harness.job.job import open_job
    from tests.unit.job.test_job_stages import INFO, pypi_job

    job = pypi_job("pkg", "==1.0")
    ctx = open_job(
        job,
        interp=INFO,
        python="/py",
        backend=StoreBackend(store=tmp_path / "s", plan=b"{}"),  # type: ignore[arg-type]
        out=tmp_path / "out",
        progress=lambda job_id, step: None,
        tarball="",
    )
    try:
        start = ctx.deadline
        assert abs(start - (time.monotonic() + job.settings.job_timeout)) < 5
        ctx.store_seconds = 1234.5
        assert ctx.deadline == start + 1234.5
    finally:
        ctx.fs.close()


class Slow(Timed):
    """Its isolated builds run past their limit (the backend kills them)."""

    def run_isolated(self, ws, argv, *, env, timeout, log, out) -> Exec:  # type: ignore[override]
        self.timeouts[log.stem] = timeout
        self.ran.append(log.stem)
        return Exec(exit_code=None, timed_out=True, duration=timeout)


def test_a_build_past_its_limit_says_the_limit_and_is_left_to_the_install(
    tmp_path: Path, index: LoopIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FT_HARNESS_LIMIT_STORE_SECONDS_PER_JOB", "600")
    index.vouch(NUMPY)
    use, log = _prepare(tmp_path, Slow(store=tmp_path / "store", plan=_plan(NUMPY)))
    assert use.built == () and use.find_links == ()
    assert len(use.failed) == 1 and "its build failed (phase wheel-numpy-2.5.5, stopped at the 6" in use.failed[0]
    assert "s left of store_seconds_per_job)" in use.failed[0]
    assert use.limits[0].startswith("limit store_seconds_per_job (600) exceeded: its step wheel-numpy-2.5.5 ran past")
    assert "numpy 2.5.5 not stored: its build failed" in log and "the install builds it itself" in log


def test_a_build_past_the_store_s_own_limit_says_so(tmp_path: Path, index: LoopIndex) -> None:
    index.vouch(NUMPY)
    use, _ = _prepare(tmp_path, Slow(store=tmp_path / "store", plan=_plan(NUMPY)))
    assert f"past its limit of {BUILD_TIMEOUT} s" in use.failed[0] and use.limits == ()


# the package's own compiled sdist, built by the store step before the jobs (#58): pkg 1.0
OWN = Sdist(name="pkg", version="1.0", url="https://files.example.org/pkg-1.0.tar.gz", sha256=_sha("pkg"))


def builds(backend: StoreBackend) -> list[str]:
    return [r for r in backend.ran if r.startswith("wheel-") and r != "wheel-plan"]


def _own_step(tmp_path: Path, backend: StoreBackend, *, build_own: bool, name: str) -> tuple[wheelsteps.StoreUse, str]:
    """pkg 1.0's store steps as the store step (``build_own``) or its job asks them."""
    return _prepare(tmp_path, backend, own=OWN.sha256, build_own=build_own, out=name)


def test_the_store_step_builds_a_compiled_package_s_own_sdist_once_and_its_job_takes_it(
    tmp_path: Path, index: LoopIndex
) -> None:
    store = tmp_path / "store"
    index.vouch(OWN)
    backend = Timed(store=store, plan=_plan())
    use, log = _own_step(tmp_path, backend, build_own=True, name="step")
    assert [w.wheel for w in use.built] == ["pkg-1.0-py3-none-any.whl"] and builds(backend) == ["wheel-pkg-1.0"]
    assert f"built pkg-1.0-py3-none-any.whl (sdist sha256 {OWN.sha256}, listed by" in log
    # the job after it: the package itself from the store, no build of it in the job
    job = Timed(store=store, plan=_plan())
    use, log = _own_step(tmp_path, job, build_own=False, name="job")
    assert builds(job) == [] and [w.wheel for w in use.found] == ["pkg-1.0-py3-none-any.whl"]
    assert f"the package itself from pkg-1.0-py3-none-any.whl (its sdist, sha256 {OWN.sha256}" in log


def test_the_store_step_builds_no_own_sdist_the_index_does_not_list(tmp_path: Path, index: LoopIndex) -> None:
    backend = Timed(store=tmp_path / "store", plan=_plan())
    use, log = _own_step(tmp_path, backend, build_own=True, name="step")
    assert builds(backend) == [] and use.built == () and len(use.untrusted) == 1
    assert "refused pkg 1.0" in log and "the index's page for pkg could not be read (HTTP Error 404" in log
