"""The verdict word (issues #57 and #58): a module of the package that re-enables the GIL outranks a
thread-unsafe suite; a crash or hang is the verdict only where its evidence holds, and a crash that
recurred is never buried under a thread-unsafe verdict. On phases of captured real runs
(tests/data/parse/<case>/, each with its CMD)."""

import dataclasses
import json

from harness.core.model import VERDICTS, Phase, severity
from harness.parse import parse_phase
from harness.verdict import decide
from tests.unit.verdict.test_verdict import DATA, S, by_kind, load, probed

PUBLISHED = dataclasses.replace(S, threads=4, iterations=3, repeat=2, test_timeout=60, job_timeout=1500, confirm=2)
CLICK = "tests/test_stream_lifecycle.py::test_invoke_with_thread_pool"
CRASHFAIL = "tests/test_log.py::test_fill_then_check_shared_log"


# ------------------------------------------------------------------ #57: the right word


def _gil(phases: list[Phase], module: str, imported: str) -> list[Phase]:
    warning = (
        "RuntimeWarning: The global interpreter lock (GIL) has been enabled to load module "
        f"'{module}', which has not declared that it can run safely without the GIL."
    )
    return probed(phases, gil_enabled=True, imported=[imported], modules=[module], warnings=[warning])


def test_a_module_of_the_package_re_enabling_the_gil_outranks_thread_unsafe():
    # psycopg2-binary 2.9.13 on 3.13t (the published 40): its import re-enables the GIL
    # (`psycopg2._psycopg`) and a test fails in threads in both modes; it was published
    # `thread-unsafe`. Here six's captured thread-unsafe runs, with a probe whose own module re-enabled it
    assert severity("gil-reenabled") < severity("thread-unsafe") < severity("baseline-failure")
    assert VERDICTS.index("gil-reenabled") == VERDICTS.index("ft-race") + 1
    six = load("confirm-six-docker")
    assert decide(six, settings=S).verdict == "thread-unsafe"  # the suite alone
    d = decide(_gil(six, "six._speedups", "six"), settings=S)
    assert d.verdict == "gil-reenabled", [f.kind for f in d.findings]
    assert d.findings[0].kind == "gil-reenabled" and d.findings[0].module == "six._speedups"
    assert by_kind(d, "thread-unsafe"), "the thread-unsafe finding is still listed"


def test_a_gil_module_of_another_distribution_keeps_its_rank_below_thread_unsafe():
    # a dependency's module (aiohttp's test deps loaded Brotli's `_brotli`) ranks as before #57:
    # after a thread-unsafe suite, above a baseline failure
    six = load("confirm-six-docker")
    d = decide(_gil(six, "_brotli", "six"), settings=S)
    assert d.verdict == "thread-unsafe"
    gil = [f for f in d.findings if f.kind == "gil-reenabled"]
    assert gil and "not a module of the package" in gil[0].message
    kinds = [f.kind for f in d.findings if f.kind in ("thread-unsafe", "gil-reenabled")]
    assert kinds.index("gil-reenabled") > kinds.index("thread-unsafe")
    # alone it is still the verdict (nothing else red): aiohttp 3.14.5's case
    assert decide(load("probe-gil-dependency"), settings=S).verdict == "gil-reenabled"


# ------------------------------------------------------------------ #58: a one-off is no verdict


def test_a_timeout_seen_once_and_never_run_alone_is_no_hang():
    # sqlalchemy 2.1.9 (#43's run, docker, the published settings): the watchdog ended
    # test_memusage once, GIL off, under load; the budget cut the run, so it never ran alone and no
    # GIL-on run happened. It was published `hang`; directly it passes 10 of 10
    tid = "test/aaa_profiling/test_memusage.py::MemUsageTest::test_registry_dispose_releases_classes[declare_last]"
    d = decide(load("watchdog-xdist-budget-cut"), settings=PUBLISHED)
    assert d.verdict != "hang" and not by_kind(d, "hang")
    assert d.verdict == "infra-error" and by_kind(d, "budget-spent")  # the budget: no package verdict
    u = by_kind(d, "unconfirmed")[tid]
    assert (u.count, u.runs, u.by_mode) == (1, 1, {"gil0": "1/1"})
    assert u.message.startswith("hang not claimed: seen once (1/1 suite runs with the GIL off), never re-run alone")
    # the same timeout in two runs is a hang (tests/data/parse/hang: 2 and 4 runs)
    assert decide(load("hang"), settings=S).verdict == "hang"


def _click(log: str) -> list[Phase]:
    """click 8.5.1's captured job (trimmed): its crashing run re-parsed from ``log``."""
    d = DATA / "confirm-click-crash"
    out = []
    for p in json.loads((d / "result.json").read_text())["phases"]:
        q = Phase.from_dict(p)
        out.append(parse_phase(dataclasses.replace(q, log=log), d) if q.name == "threads-gil0-r2" else q)
    return out


def test_one_worker_death_with_no_signal_no_stack_and_no_recurrence_is_unconfirmed():
    # click 8.5.1 at confirm: 2 was published `crash` from one xdist worker death that reached the
    # log with no signal and no stack ("crashed (signal None)... did not recur alone")
    phases = _click("logs/threads-gil0-r2-nodump.log")
    (r2,) = [p for p in phases if p.name == "threads-gil0-r2"]
    assert [(c.test_id, c.signal, c.stack_top) for c in r2.crashes] == [(CLICK, None, "")]
    d = decide(phases, settings=PUBLISHED)
    assert not by_kind(d, "crash") and not by_kind(d, "ft-crash") and d.verdict not in ("crash", "ft-crash")
    u = by_kind(d, "unconfirmed")[CLICK]
    assert (u.ratio, u.confirmed) == ("1/3", {"gil0": "0/2", "gil1": "0/2"})
    assert u.message.startswith(
        "ft-crash not claimed: seen once (1/3 suite runs with the GIL off), not again alone "
        "(0/2 with the GIL off, 0/2 with the GIL on), and it left no fatal-signal dump with a stack"
    ), u.message
    # a one-off blames the test for nothing else: its assertion failures speak (both modes, alone too)
    unsafe = by_kind(d, "thread-unsafe")[CLICK]
    assert d.verdict == "thread-unsafe" and unsafe.confirmed == {"gil0": "2/2", "gil1": "2/2"}


def test_one_crash_whose_dump_has_a_signal_and_a_stack_is_a_crash():
    # the same job as captured: its one crash carries faulthandler's dump (SIGSEGV, click/testing.py
    # `write`, the test's frame): one observation with its stack holds a crash; "only without the
    # GIL" does not hold on 0/2 against 0/2 alone, so `crash`, not `ft-crash`
    d = decide(_click("logs/threads-gil0-r2.log"), settings=PUBLISHED)
    assert d.verdict == "crash"
    c = by_kind(d, "crash")[CLICK]
    assert c.signal == 11 and "test_stream_lifecycle.py" in c.stack_top and "click/testing.py" in c.excerpt
    assert (
        c.confirmed == {"gil0": "0/2", "gil1": "0/2"} and "whether only without the GIL is not established" in c.message
    )


# ------------------------------------------------------------------ #58: a crash is never buried


def test_a_crash_that_recurred_outranks_the_tests_assertion_failures():
    # ft_crashfail at the published settings (confirm: 2): crashes in both GIL-off threaded runs and
    # 2/2 alone, fails by assertion with the GIL on. 2/2 against 0/2 alone does not hold "only
    # without the GIL" (p = 0.17), and it is never below `crash`
    d = decide(load("confirm-crashfail"), settings=dataclasses.replace(PUBLISHED, job_timeout=600))
    assert d.verdict == "crash", [(f.kind, f.message) for f in d.findings]
    c = by_kind(d, "crash")[CRASHFAIL]
    assert c.by_mode == {"gil0": "2/3", "gil1": "0/3"} and c.confirmed == {"gil0": "2/2", "gil1": "0/2"}
    assert "one-sided Fisher p = 0.167" in c.message


def test_a_crash_seen_only_in_runs_alone_is_a_crash_not_a_footnote():
    # the same job, its GIL-off threaded suite runs left out: the suite then shows only assertion
    # failures (GIL on), so the test is re-run alone as a thread-unsafe candidate, and alone it
    # crashes 2/2 with the GIL off. Before #58 that crash was a footnote ("alone it crashed 2/2 with
    # the GIL off") of a thread-unsafe finding, here unconfirmed, and the verdict was `compatible`
    phases = load("confirm-crashfail", keep=lambda p: not (p.kind == "threads" and p.gil == 0))
    d = decide(phases, settings=dataclasses.replace(PUBLISHED, job_timeout=600))
    assert d.verdict == "crash", [(f.kind, f.message) for f in d.findings]
    c = by_kind(d, "crash")[CRASHFAIL]
    assert c.confirmed == {"gil0": "2/2", "gil1": "0/2"} and c.signal == 6 and "test_log.py" in c.stack_top
    assert c.message.startswith(f"{CRASHFAIL} crashed (Aborted) in its runs alone: 2/2 with the GIL off, 0/2 with")
    assert "re-run alone as a thread-unsafe finding" in c.message
    assert CRASHFAIL in by_kind(d, "unconfirmed")  # its assertion failures, still listed
    # with the settings' claims not checked (what confirmation picks from), no crash is made up
    assert not by_kind(decide(phases, settings=PUBLISHED, claims=False), "crash")


def test_a_result_read_back_decides_the_same():
    phases = load("confirm-crashfail")
    back = [Phase.from_dict(json.loads(json.dumps(p.to_dict()))) for p in phases]
    assert decide(back, settings=PUBLISHED) == decide(phases, settings=PUBLISHED)


def test_a_hangs_runs_alone_make_no_crash():
    # ft_deadlock's captured runs alone (the watchdog ended each): a hang that recurred alone, 2/2
    # a mode, and nothing of it is a crash
    d = decide(load("confirm-deadlock"), settings=S)
    h = by_kind(d, "hang")["tests/test_ledger.py::test_post_then_audit"]
    assert d.verdict == "hang" and h.confirmed == {"gil0": "2/2", "gil1": "2/2"}
    assert not by_kind(d, "crash") and not by_kind(d, "ft-crash")
