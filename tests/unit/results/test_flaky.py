"""A verdict that differs between two jobs of one release: a difference, or chance (issue #47).

The counts are wrapt 2.0.1's of 2026-12-05/06 (docs/results): ``test_wrap_class_method_inherited``
failed in 4 of 6 threaded runs on one interpreter and in none of 3 on the other, where, run
directly, it fails in about 1 run of 8 on both."""

from harness.core.model import Finding
from harness.results import flaky
from harness.results.aggregate import across
from harness.results.diff import diff_jobs, has_regression
from harness.results.report import Cell, Column, JobEntry, JobInterpreter, PhaseRow

TID = "tests/conformance/test_inheritance.py::test_wrap_class_method_inherited"


def job(name, verdict, findings=(), threads=((0, 3),), version="2.0.1", jid=None):
    phases = tuple(
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


def unsafe(count, runs, confirmed=None):
    return Finding(kind="thread-unsafe", test_id=TID, modes=(0, 1), count=count, runs=runs, confirmed=confirmed or {})


def test_a_thread_unsafe_column_against_a_compatible_one_on_one_runs_counts_is_flaky():
    a = job("cp313t", "thread-unsafe", [unsafe(4, 6)], threads=((0, 3), (1, 3)))
    b = job("cp31315t", "compatible")
    fl = flaky.check(a, b)
    assert fl is not None and fl.severe == (4, 6) and fl.other == (0, 3)
    cells = {
        "cp313t": Cell(verdict="thread-unsafe", job_id=a.job_id),
        "cp31315t": Cell(verdict="compatible", job_id=b.job_id),
    }
    cols = [Column(name="cp313t", label="3.13.5t"), Column(name="cp31315t", label="3.13.15t")]
    text = across(cells, cols, {a.job_id: a, b.job_id: b})
    assert text.startswith(f"flaky: `{TID}` 4/6 runs on 3.13.5t, 0/3 on 3.13.15t (one-sided Fisher p = ")
    assert text.endswith("thread-unsafe on 3.13.5t, compatible on 3.13.15t")


def test_counts_that_hold_are_a_difference():
    # failed alone 10/10 in both modes on one, never in 12 runs of the other: a real difference
    a = job("cp313t", "thread-unsafe", [unsafe(6, 6, {"gil0": "10/10", "gil1": "10/10"})])
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
    f = Finding(
        kind="thread-unsafe", test_id=tid, modes=(0, 1), count=4, runs=6, confirmed={"gil0": "4/4", "gil1": "3/4"}
    )
    a = job("cp313t", "thread-unsafe", [f], threads=((0, 3), (1, 2)))
    b = job("cp31315t", "compatible", threads=((0, 3),))
    fl = flaky.check(a, b)
    assert fl is not None and fl.severe == (4, 6) and fl.other == (0, 3) and fl.p > 0.05
    # both sides ran it alone: those runs, on both sides
    g = Finding(
        kind="unconfirmed", test_id=tid, modes=(0, 1), count=1, runs=6, confirmed={"gil0": "0/8", "gil1": "0/8"}
    )
    held = job("cp31315t", "unconfirmed", [g], threads=((0, 3), (1, 3)))
    assert flaky.check(a, replace_verdict(held, "compatible")) is None  # 7/8 against 0/16 holds


def replace_verdict(j, verdict):
    from dataclasses import replace

    return replace(j, verdict=verdict)


def test_not_counted_or_a_new_release_is_what_it_is():
    assert flaky.check(job("a", "build-failure"), job("b", "compatible")) is None
    assert flaky.check(job("a", "thread-unsafe", [unsafe(1, 6)]), job("b", "compatible", version="2.0.2")) is None


def test_diff_says_flaky_with_both_counts_and_is_no_regression():
    old = [job("cp313t", "compatible", jid="cp313t--wrapt")]
    new = [job("cp313t", "thread-unsafe", [unsafe(2, 6)], threads=((0, 3), (1, 3)), jid="cp313t--wrapt")]
    (c,) = diff_jobs(old, new)
    assert c.kind == "flaky" and not c.regression and not has_regression([c])
    assert "2/6 runs on new, 0/3 on old" in c.describe()
    # and a change the counts hold stays a regression
    held = [job("cp313t", "thread-unsafe", [unsafe(6, 6, {"gil0": "16/16", "gil1": "16/16"})], jid="cp313t--wrapt")]
    old6 = [job("cp313t", "compatible", threads=((0, 6), (1, 6)), jid="cp313t--wrapt")]
    (c2,) = diff_jobs(old6, held)
    assert c2.kind == "newly-broken" and c2.regression
