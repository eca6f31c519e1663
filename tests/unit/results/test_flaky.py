"""A verdict that differs between two jobs of one release: a difference, or chance (issue #47).

The counts are wrapt 2.0.1's of 2026-12-05/06 (docs/results): ``test_wrap_class_method_inherited``
failed in 4 of 6 threaded runs on one interpreter and in none of 3 on the other, where, run
directly, it fails in about 1 run of 8 on both."""

from dataclasses import replace

from harness.core.model import Finding
from harness.results import flaky
from harness.results.aggregate import across
from harness.results.diff import diff_jobs, has_regression
from harness.results.report import Cell, Column, JobEntry, JobInterpreter, PhaseRow

TID = "tests/conformance/test_inheritance.py::test_wrap_class_method_inherited"


def job(name, verdict, findings=(), threads=((0, 3),), version="2.0.1", jid=None, plain=()):
    phases = tuple(PhaseRow(name=f"plain-gil{m}", kind="plain", gil=m, outcome="ok") for m in plain) + tuple(
        PhaseRow(name=f"threads-gil{m}-r{r}", kind="threads", gil=m, rep=r, outcome="ok")
        for m, n in threads
        for r in range(1, n + 1)
    )
    return JobEntry(
        job_id=jid or f"{name}--wrapt",
        name="wrapt",
        version=version,
        interpreter=JobInterpreter(name=name),
        verdict=verdict,
        findings=tuple(findings),
        phases=phases,
    )


def unsafe(by_mode, confirmed=None, tid=TID):
    """A thread-unsafe finding with its suite counts per mode: {0: (1, 3), 1: (3, 3)}."""
    return Finding(
        kind="thread-unsafe",
        test_id=tid,
        modes=(0, 1),
        count=sum(k for k, _ in by_mode.values()),
        runs=sum(n for _, n in by_mode.values()),
        by_mode={f"gil{m}": f"{k}/{n}" for m, (k, n) in by_mode.items()},
        confirmed=confirmed or {},
    )


def test_a_thread_unsafe_column_against_a_compatible_one_on_one_runs_counts_is_flaky():
    # 1/3 GIL-off and 3/3 GIL-on runs on one side; the other ran 3 GIL-off runs only (nothing
    # failed there, so no GIL-on run): the GIL-off runs of both are what compare
    a = job("cp313t", "thread-unsafe", [unsafe({0: (1, 3), 1: (3, 3)})], threads=((0, 3), (1, 3)))
    b = job("cp31315t", "compatible")
    fl = flaky.check(a, b)
    assert fl is not None and fl.severe == (1, 3) and fl.other == (0, 3)
    cells = {
        "cp313t": Cell(verdict="thread-unsafe", job_id=a.job_id),
        "cp31315t": Cell(verdict="compatible", job_id=b.job_id),
    }
    cols = [Column(name="cp313t", label="3.13.5t"), Column(name="cp31315t", label="3.13.15t")]
    text = across(cells, cols, {a.job_id: a, b.job_id: b})
    assert text.startswith(f"flaky: `{TID}` 1/3 GIL-off runs on 3.13.5t, 0/3 on 3.13.15t (one-sided Fisher p = ")
    assert text.endswith("thread-unsafe on 3.13.5t, compatible on 3.13.15t")


def test_counts_that_hold_are_a_difference():
    # failed alone 10/10 in both modes on one, never in 12 runs of the other: a real difference
    a = job("cp313t", "thread-unsafe", [unsafe({0: (3, 3), 1: (3, 3)}, {"gil0": "10/10", "gil1": "10/10"})])
    b = job("cp31315t", "compatible", threads=((0, 6), (1, 6)))
    assert flaky.check(a, b) is None
    cells = {
        "cp313t": Cell(verdict="thread-unsafe", job_id=a.job_id),
        "cp31315t": Cell(verdict="compatible", job_id=b.job_id),
    }
    cols = [Column(name="cp313t", label="3.13.5t"), Column(name="cp31315t", label="3.13.15t")]
    assert across(cells, cols, {a.job_id: a, b.job_id: b}) == "thread-unsafe on 3.13.5t, compatible on 3.13.15t"


def test_runs_alone_on_one_side_are_not_held_against_suite_runs_on_the_other():
    # idna 3.20, the default matrix on docker, 2026-12-06 (runs/s15/acc1-docker): on 3.13.5t
    # test_version_flag failed 4 of 6 threaded suite runs and 7 of 8 runs alone; on 3.13.15t it
    # passed its 3 suite runs and was never run alone. 7/8 against 0/3 would "hold" (p = 0.02),
    # a test alone fails more often than in its suite; 4/6 against 0/3 does not.
    tid = "tests/test_idna_cli.py::CLIVersionTests::test_version_flag"
    f = unsafe({0: (1, 3), 1: (3, 3)}, {"gil0": "4/4", "gil1": "3/4"}, tid=tid)
    a = job("cp313t", "thread-unsafe", [f], threads=((0, 3), (1, 3)))
    b = job("cp31315t", "compatible", threads=((0, 3),))
    fl = flaky.check(a, b)
    assert fl is not None and fl.severe == (1, 3) and fl.other == (0, 3) and fl.p > 0.05
    # both sides ran it alone: those runs, on both sides
    g = Finding(
        kind="unconfirmed", test_id=tid, modes=(0, 1), count=1, runs=6, confirmed={"gil0": "0/8", "gil1": "0/8"}
    )
    held = job("cp31315t", "unconfirmed", [g], threads=((0, 3), (1, 3)))
    assert flaky.check(a, replace_verdict(held, "compatible")) is None  # 7/8 against 0/16 holds


def replace_verdict(j, verdict):
    return replace(j, verdict=verdict)


def test_not_counted_or_a_new_release_is_what_it_is():
    assert flaky.check(job("a", "build-failure"), job("b", "compatible")) is None
    a = job("a", "thread-unsafe", [unsafe({0: (1, 3), 1: (0, 3)})])
    assert flaky.check(a, job("b", "compatible", version="2.0.2")) is None


def test_diff_says_flaky_with_both_counts_and_is_no_regression():
    old = [job("cp313t", "compatible", jid="cp313t--wrapt")]
    new = [
        job("cp313t", "thread-unsafe", [unsafe({0: (1, 3), 1: (1, 3)})], threads=((0, 3), (1, 3)), jid="cp313t--wrapt")
    ]
    (c,) = diff_jobs(old, new)
    assert c.kind == "flaky" and not c.regression and not has_regression([c])
    assert "1/3 GIL-off runs on new, 0/3 on old" in c.describe()
    # and a change the counts hold stays a regression
    held = [
        job(
            "cp313t",
            "thread-unsafe",
            [unsafe({0: (3, 3), 1: (3, 3)}, {"gil0": "16/16", "gil1": "16/16"})],
            jid="cp313t--wrapt",
        )
    ]
    old6 = [job("cp313t", "compatible", threads=((0, 6), (1, 6)), jid="cp313t--wrapt")]
    (c2,) = diff_jobs(old6, held)
    assert c2.kind == "newly-broken" and c2.regression


IDNA = "tests/test_idna_cli.py::CLIVersionTests::test_version_flag"


def test_the_modes_compared_are_the_modes_both_sides_ran():
    # idna 3.20 on 3.13.15t, docker: on 2026-12-06 test_version_flag failed 2 of 3 GIL-off and 3
    # of 3 GIL-on suite runs (runs/s16 main job); in the run before (runs/s15/acc1-docker) it passed
    # 3 GIL-off runs and, nothing having failed, no GIL-on run was made. 5/6 of both modes against
    # 0/3 GIL-off was p = 0.048: "newly-broken". Mode for mode it is 2/3 against 0/3: p = 0.2.
    new = job(
        "cp31315t",
        "thread-unsafe",
        [unsafe({0: (2, 3), 1: (3, 3)}, {"gil0": "4/4", "gil1": "4/4"}, tid=IDNA)],
        threads=((0, 3), (1, 3)),
        jid="cp31315t--idna",
    )
    old = job("cp31315t", "compatible", jid="cp31315t--idna")
    fl = flaky.check(new, old)
    assert fl is not None and (fl.severe, fl.other) == ((2, 3), (0, 3)) and round(fl.p, 2) == 0.2
    (c,) = diff_jobs([old], [new])
    assert c.kind == "flaky" and not c.regression
    # where the other side ran the GIL-on runs too, they count: 5/6 against 0/6 holds (p = 0.008)
    both = job("cp31315t", "compatible", threads=((0, 3), (1, 3)), jid="cp31315t--idna")
    assert flaky.check(new, both) is None


def test_a_result_without_counts_per_mode_compares_only_like_with_like():
    # schema 14 and older: count/runs of both modes together. Against a side that ran GIL-off
    # runs only, no comparison is of one mode: nothing backs the difference (p = 1)
    old_f = Finding(kind="thread-unsafe", test_id=IDNA, modes=(0, 1), count=5, runs=6)
    a = job("cp31315t", "thread-unsafe", [old_f], threads=((0, 3), (1, 3)))
    fl = flaky.check(a, job("cp31315t", "compatible"))
    assert fl is not None and fl.p == 1.0 and fl.other == (0, 0)
    assert fl.describe("new", "old") == (
        f"flaky: `{IDNA}` 5/6 runs on new; old has no counts of the same GIL mode(s) to compare: "
        "not a difference the runs hold"
    )
    # against a side that ran both modes, the whole counts of both: 5/6 against 0/6
    assert flaky.check(a, job("cp31315t", "compatible", threads=((0, 3), (1, 3)))) is None


def test_an_event_seen_with_the_gil_on_on_one_side_only_compares_the_gil_on_runs():
    # both sides saw it with the GIL off; one also with it on (thread-unsafe), the other not
    # (ft-race): the GIL-on runs decide, alone where both have them, else the suite's
    a = job("cp313t", "thread-unsafe", [unsafe({0: (2, 3), 1: (1, 3)})], threads=((0, 3), (1, 3)))
    race = Finding(kind="ft-race", test_id=TID, modes=(0,), count=2, runs=3, by_mode={"gil0": "2/3", "gil1": "0/3"})
    b = job("cp31315t", "ft-race", [race], threads=((0, 3), (1, 3)))
    fl = flaky.check(a, b)
    # ft-race is the more severe verdict; the GIL-on events are the other side's (gil_on)
    assert fl is not None and (fl.severe, fl.other) == ((1, 3), (0, 3)) and fl.gil_on
    assert "1/3 GIL-on runs on cp313t, 0/3 on cp31315t" in fl.describe("cp31315t", "cp313t")
    alone = replace(b, findings=(replace(race, confirmed={"gil0": "9/10", "gil1": "0/10"}),))
    a2 = job("cp313t", "thread-unsafe", [unsafe({0: (2, 3), 1: (1, 3)}, {"gil0": "10/10", "gil1": "9/10"})])
    assert flaky.check(a2, alone) is None  # 9/10 against 0/10 with the GIL on, alone: a difference


def test_a_crash_is_counted_over_the_runs_it_could_have_happened_in_on_both_sides():
    # wrapt 2.0.1 on 3.13.5t, the default matrix of 2026-12-06 (runs/s17): on the local backend
    # test_lazy_object_proxy crashed (SIGSEGV) in 1 of its 4 GIL-off runs (the plain one and 3
    # threaded), never in 20 alone; on docker it did not crash. The other side's runs are its 4
    # GIL-off runs of the same kinds (plain and threaded), not its 3 threaded ones only.
    tid = "tests/core/test_lazy_object_proxy.py::TestLazyObjectProxy::test_lazy_object_proxy"
    crash = Finding(
        kind="crash",
        test_id=tid,
        modes=(0,),
        count=1,
        runs=4,
        signal=11,
        by_mode={"gil0": "1/4", "gil1": "0/4"},
        confirmed={"gil0": "0/10", "gil1": "0/10"},
    )
    local = job("cp313t", "crash", [crash], threads=((0, 3), (1, 3)), plain=(0, 1))
    docker = job("cp313t", "thread-unsafe", [unsafe({0: (2, 3), 1: (2, 3)})], threads=((0, 3), (1, 3)), plain=(0, 1))
    fl = flaky.check(local, docker)
    assert fl is not None and (fl.severe, fl.other) == ((1, 4), (0, 4)) and fl.modes == (0,)
    assert "1/4 GIL-off runs on local, 0/4 on docker" in fl.describe("local", "docker")


def test_a_failure_a_plain_run_nominated_is_counted_over_plain_runs_on_the_other_side():
    # an ft-race nominated by a plain run (failed in both plain GIL-off runs, passed with the GIL
    # on) counts plain runs (verdict.failures); the other side's 2 plain GIL-off runs are what
    # compare, not its 6 threaded ones: 2/2 against 0/2 is chance (p = 0.17), where 2/2 against
    # 0/6 would read as a difference (p = 0.036)
    race = Finding(
        kind="ft-race", test_id=TID, modes=(0,), count=2, runs=2, phase="plain-gil0", by_mode={"gil0": "2/2"}
    )
    a = job("cp313t", "ft-race", [race], threads=(), plain=(0, 0, 1, 1))
    b = job("cp31315t", "compatible", threads=((0, 6),), plain=(0, 0))
    fl = flaky.check(a, b)
    assert fl is not None and (fl.severe, fl.other) == ((2, 2), (0, 2)) and fl.modes == (0,)
    assert "2/2 GIL-off runs on old, 0/2 on new" in fl.describe("old", "new")
