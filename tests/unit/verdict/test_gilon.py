"""harness.verdict.gilon (settings.gil_on: targeted, issue #34): which tests the GIL-on runs need,
and that the verdict decides the same from GIL-on runs of only those tests as from runs of the
whole suite. The phases are the fixture packages' captured real runs (tests/data/fixtures): the
GIL-on runs of ``targeted`` are their GIL-on runs kept to the tests selected, as the plugin
(harness/_inner/ft_harness_only.py) keeps a run to them; that plugin runs in a real pytest below."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness.core.evidence import Crash, Hang, HungTest
from harness.core.jobspec import Settings
from harness.core.model import Phase, TestCase
from harness.parse import parse_phase
from harness.verdict import decide
from harness.verdict.gilon import select, skipped_modes

ROOT = Path(__file__).resolve().parents[3]
CAPTURED = ROOT / "tests" / "data" / "fixtures"
FULL = Settings(repeat=3, test_timeout=10, confirm=0, gil_on="full")
TARGETED = replace(FULL, gil_on="targeted")
FIXTURES = sorted(d.name for d in CAPTURED.iterdir() if (d / "threads-gil1-r1.log").is_file())


def _phases(fixture: str) -> list[Phase]:
    d = CAPTURED / fixture
    meta = json.loads((d / "phases.json").read_text())
    out = []
    names = [n for n in meta if n.startswith(("plain-gil", "threads-gil"))]
    for name in sorted(names, key=lambda n: (n[-1] if n.startswith("plain") else n.split("-")[1][-1], n)):
        m = meta[name]
        kind, gil, rep = (
            name.split("-")[0],
            int(name.split("gil")[1][0]),
            int(name.rsplit("r", 1)[1]) if "-r" in name else 0,
        )
        out.append(
            parse_phase(
                Phase(
                    name=name,
                    kind=kind,
                    gil=gil,
                    rep=rep,
                    exit_code=m["exit_code"],
                    duration=m["duration"],
                    log=m["log"],
                    junit=m.get("junit") or "",
                ),
                d,
            )
        )
    return out


def _kept(p: Phase, only: tuple[str, ...]) -> Phase:
    """A GIL-on run of ``only``: what the plugin keeps (node ids, or a file's items)."""

    def hit(t: str) -> bool:
        return t in only or t.split("::", 1)[0] in only

    hang = p.hang and replace(p.hang, tests=tuple(t for t in p.hang.tests if hit(t.test_id)))
    return replace(
        p,
        subset=len(only),
        tests={t: tc for t, tc in p.tests.items() if hit(t)},
        crashes=tuple(c for c in p.crashes if hit(c.test_id)),
        hang=hang if hang and (hang.tests or hang.job_timeout) else None,
    )


def _targeted(phases: list[Phase]) -> list[Phase]:
    off = [p for p in phases if p.gil == 0]
    sel = select(off, TARGETED)
    on = [p for p in phases if p.gil == 1]
    return off + ({"none": [], "suite": on}.get(sel.ran) or [_kept(p, sel.tests) for p in on])


def _said(phases: list[Phase], settings: Settings) -> tuple:
    d = decide(phases, settings=settings)
    return d.verdict, [(f.kind, f.test_id, f.modes, f.count, f.runs, f.message) for f in d.findings]


@pytest.mark.parametrize("fixture", FIXTURES)
def test_the_verdict_from_targeted_gil_on_runs_is_the_full_runs_verdict(fixture: str) -> None:
    phases = _phases(fixture)
    assert _said(_targeted(phases), TARGETED) == _said(phases, FULL)


def test_the_captured_fixtures_cover_each_way_the_gil_on_runs_go() -> None:
    ran = {f: select([p for p in _phases(f) if p.gil == 0], TARGETED) for f in FIXTURES}
    assert ran["ft_clean"].ran == "none"
    assert ran["ft_threadunsafe"].ran == "tests" and ran["ft_sharedbuf"].ran == "tests"
    assert ran["ft_baseline"].ran == "tests"
    assert {s.ran for s in ran.values()} >= {"none", "tests"}, ran


def _off(**kw) -> list[Phase]:
    ok = {"tests/test_a.py::test_a": TestCase(outcome="passed"), "tests/test_b.py::test_b": TestCase(outcome="passed")}
    base = dict(exit_code=0, tests=ok, excerpt="===== 2 passed in 0.1s =====")
    plain = Phase(name="plain-gil0", kind="plain", gil=0, **{**base, **kw})
    return [plain, Phase(name="threads-gil0-r1", kind="threads", gil=0, rep=1, **base)]


def test_what_the_gil_on_runs_get() -> None:
    assert select(_off(), TARGETED).ran == "none"
    assert skipped_modes(_off(), TARGETED) == {1} and skipped_modes(_off(), FULL) == set()
    bad = {"tests/test_a.py::test_a": TestCase(outcome="failed"), "tests/test_b.py::test_b": TestCase(outcome="passed")}
    sel = select(_off(tests=bad, exit_code=1, excerpt="== 1 failed, 1 passed in 0.1s =="), TARGETED)
    assert (sel.ran, sel.tests) == ("tests", ("tests/test_a.py::test_a",))
    crashed = _off(
        exit_code=1,
        crashes=(Crash(test_id="tests/test_b.py::test_b", signal=11),),
        excerpt="== 1 failed, 1 passed in 0.1s ==",
    )
    assert select(crashed, TARGETED).tests == ("tests/test_b.py::test_b",)
    hung = _off(
        exit_code=1,
        excerpt="== 1 failed in 0.1s ==",
        hang=Hang(tests=(HungTest(test_id="tests/test_b.py::test_b", excerpt="Timeout"),)),
    )
    assert select(hung, TARGETED).tests == ("tests/test_b.py::test_b",)
    assert select(_off(), FULL).why == "settings.gil_on: full"
    empty = [replace(p, tests={}, exit_code=5, excerpt="== no tests ran in 0.1s ==") for p in _off()]
    assert select(empty, TARGETED).why == "no test ran with the GIL off"
    assert select(_off(), replace(TARGETED, gil_modes=(0,))).ran == "suite"


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({"exit_code": None, "timed_out": True}, "killed at its timeout"),
        ({"exit_code": -9, "signal": 9}, "killed"),
        ({"exit_code": 2}, "pytest exited 2"),
        ({"excerpt": "tests/test_a.py::test_a PASSED"}, "no pytest summary line"),
        ({"tests": {}, "excerpt": "== no tests ran in 0.1s ==", "exit_code": 5}, "pytest exited 5"),
        ({"exit_code": 1, "crashes": (Crash(signal=11),)}, "named no test"),
    ],
)
def test_gil_off_runs_that_did_not_run_the_suite_send_the_gil_on_runs_over_all_of_it(kw: dict, why: str) -> None:
    sel = select(_off(**kw), TARGETED)
    assert sel.ran == "suite" and why in sel.why, sel


def test_a_subset_run_is_no_suite_that_mostly_errored_and_says_nothing_of_coverage() -> None:
    errors = {f"t.py::test_{i}": TestCase(outcome="error", message="E fixture") for i in range(25)}
    passed = {f"t.py::ok_{i}": TestCase(outcome="passed") for i in range(100)}
    summary = "== 100 passed, 25 errors in 1s =="
    off = [Phase(name="plain-gil0", kind="plain", gil=0, exit_code=1, tests={**errors, **passed}, excerpt=summary)]
    on = Phase(name="plain-gil1", kind="plain", gil=1, exit_code=1, tests=errors, excerpt=summary, subset=25)
    assert decide([*off, on], settings=TARGETED).verdict == "baseline-failure"
    assert decide([*off, replace(on, subset=0)], settings=TARGETED).verdict == "infra-error"  # a whole suite's run
    threads = Phase(
        name="threads-gil1-r1",
        kind="threads",
        gil=1,
        rep=1,
        exit_code=0,
        tests={"t.py::ok_1": TestCase(outcome="passed")},
        excerpt=summary,
        subset=1,
    )
    assert "gil1" not in decide([*off, threads], settings=TARGETED).coverage


def test_the_plugin_keeps_a_real_pytest_run_to_the_listed_tests(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_m.py").write_text(
        "import pytest\n\nclass TestK:\n    def test_in_class(self): pass\n\n"
        "@pytest.mark.parametrize('x', ['a b', 'c'])\ndef test_p(x): pass\n\ndef test_other(): pass\n"
    )
    (tmp_path / "tests" / "test_whole.py").write_text("def test_w1(): pass\n\ndef test_w2(): pass\n")
    listed = tmp_path / "only.txt"  # a node id, a JUnit-guessed id (a dot for the class), a parametrized id, a file
    listed.write_text(
        "tests/test_m.py::test_p[a b]\ntests/test_m.TestK.py::test_in_class\n"
        "tests/test_whole.py\ntests/test_gone.py::test_never\n"
    )
    inner = ROOT / "harness" / "_inner"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "ft_harness_only",
            f"--ft-harness-only={listed}",
            "-v",
            "-c",
            "/dev/null",
            f"--rootdir={tmp_path}",
            "tests",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(inner), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    ran = sorted(ln.split(" ")[0] for ln in out.stdout.splitlines() if " PASSED" in ln)
    assert ran == [
        "tests/test_m.py::TestK::test_in_class",
        "tests/test_m.py::test_p[a",
        "tests/test_whole.py::test_w1",
        "tests/test_whole.py::test_w2",
    ], out.stdout
    assert "4 passed, 2 deselected" in out.stdout and "only the 4 test id(s) listed" in out.stdout


def test_one_predicate_says_whether_a_job_is_targeted() -> None:
    """core.gilonrecord.targeted, asked by the test stage, the verdict and the plan's estimate: the
    GIL-on runs follow the GIL-off ones only with gil_on: targeted, both modes and no TSan."""
    from harness.config import timings
    from harness.core.gilonrecord import targeted
    from harness.verdict.gilon import _targeted

    assert targeted("targeted", (0, 1)) and targeted("targeted", (1, 0))
    assert not targeted("targeted", (0, 1), tsan=True)
    assert not targeted("full", (0, 1)) and not targeted("targeted", (0,)) and not targeted("targeted", (1,))
    assert _targeted(TARGETED) and not _targeted(FULL) and not _targeted(replace(TARGETED, gil_modes=(0,)))
    assert timings.targeted(TARGETED) and not timings.targeted(TARGETED, tsan=True)
    # a measured profile's settings, as stored: no gil_on is full, no gil_modes both modes
    assert timings.targeted({"gil_on": "targeted"}) and not timings.targeted({})
    assert not timings.targeted({"gil_on": "targeted", "gil_modes": [0]})
