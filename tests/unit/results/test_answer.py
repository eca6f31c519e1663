"""Issue #44: the table answers "does it work without the GIL as it does with it?", with the
reach of the check, and no sentence the runs do not back (harness.results.answer,
harness.verdict.coverage.reach, harness.render.findings)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness.core.gilonrecord import GilOn
from harness.core.jobspec import Settings
from harness.core.model import Finding
from harness.render import html, markdown
from harness.render.chart import column_summaries, runs_label, shorten
from harness.render.common import reach_text
from harness.results import aggregate
from harness.results.load import load_results
from harness.results.report import REPORT_SCHEMA
from harness.verdict import decide
from harness.verdict.coverage import reach
from harness.verdict.gilon import select
from tests.data.report.shared import DATA, full_report
from tests.unit.verdict.test_verdict import load as load_phases


def _docker(tests: bool = False) -> list:
    results, problems = load_results([DATA / "docker"], tests=tests)
    assert problems == []
    return results


def test_the_answer_of_each_verdict_on_the_fixture_run():
    rep = full_report()
    rows = {r.name: r for r in rep.table}
    cell = {name: next(iter(r.cells.values())) for name, r in rows.items()}
    # thread-unsafe in both modes: works without the GIL as with it, with a neutral caveat
    assert (cell["fx-thread-unsafe"].answer, cell["fx-thread-unsafe"].caveat) == (
        "no-ft-problem",
        "fails in threads with the GIL too",
    )
    assert (cell["fx-baseline"].answer, cell["fx-baseline"].caveat) == ("no-ft-problem", "fails without threads too")
    # what free-threading causes
    for name in ("fx-race", "fx-ft-crash", "msgpack", "fx-refuses-ft"):
        assert rows[name].answer == "ft-problem", name
    # a crash or hang with the GIL on too: serious, apart from both
    assert (cell["fx-crash"].answer, cell["fx-crash"].caveat) == ("both-modes", "crashes with the GIL on too")
    assert (cell["fx-hang"].answer, cell["fx-hang"].caveat) == ("both-modes", "hangs with the GIL on too")
    assert rows["idna"].answer == rows["fx-notests"].answer == "not-judged"
    assert rep.answers == {"ft-problem": 5, "both-modes": 2, "not-judged": 2, "no-ft-problem": 4}
    assert sum(rep.answers.values()) == len(rep.table)
    first = column_summaries(rep)[0]  # 3.13.5t: the headline's count and the bar
    # fx-thread-unsafe, fx-baseline and fx-all-unsafe (nothing in threads) with a caveat
    assert (first["works"], first["total"], first["compatible"], first["caveats"]) == (4, 13, 2, 3)
    assert cell["fx-all-unsafe"].caveat == "nothing checked in threads: 0 of 8"
    assert [s["answer"] for s in first["segments"]] == ["no-ft-problem", "ft-problem", "both-modes", "not-judged"]
    assert first["segments"][0]["verdicts"] == "thread-unsafe 1, baseline-failure 1, compatible 2"


def test_a_gil_reenabled_finding_beside_a_thread_unsafe_verdict_is_a_free_threading_problem():
    """The verdict is the most severe finding; the answer looks at all of them."""
    results = [r for r in full_report().packages if r.job_id == "cp313t--fx-thread-unsafe"]
    p = results[0]
    gil = Finding(kind="gil-reenabled", module="fx._ext", modes=(0,), message="GIL re-enabled by `fx._ext`")
    from harness.results.answer import answer

    assert answer(p).answer == "no-ft-problem"
    assert answer(dataclasses.replace(p, findings=(*p.findings, gil))).answer == "ft-problem"


def test_cffis_build_failure_has_a_short_cause_and_a_recipe_in_report_md():
    rep = aggregate.build_report(_docker(), meta={})
    cffi = next(r for r in rep.table if r.name == "cffi")
    assert {c.cause for c in cffi.cells.values()} == {"refuses 3.13t; supports 3.14t+"}
    assert cffi.answer == "ft-problem"
    md = markdown.render(rep)
    for p in rep.packages:  # every package's deciding finding, with a recipe when it has one
        f = next((f for f in p.findings if f.kind == p.verdict), None)
        if f is None:
            continue
        sec = md.split(f"### {markdown.ICON[p.verdict]} {p.name} {p.version} — {p.verdict}")[1].split("\n### ")[0]
        assert f"**{f.kind}**" in sec
        if p.name == "cffi":
            recipe = sec.split("**Reproduce on your machine:**")[1].split("```sh\n")[1].split("```")[0]
            assert "python3.13t -m venv ft" in recipe and "pip install -v cffi==2.1.1" in recipe
            assert "/tmp/" not in recipe and "work/" not in recipe
    table = md.split("## Packages\n\n")[1].split("\n\n")[0]
    assert "| cffi | 2.1.1 | ⛔ **build-failure** | ⛔ **build-failure** | refuses 3.13t; supports 3.14t+ |" in table


def test_reach_counts_tests_in_threads_with_the_gil_off_that_no_gil_on_run_failed():
    """Captured runs: mix (a race, a thread-unsafe test, a baseline failure among 10 tests),
    allunsafe (every test thread-unsafe: nothing in threads), markupsafe 3.0.4 on docker."""
    mix = load_phases("mix")
    d = decide(mix, settings=Settings())
    cov = d.coverage["gil0"]
    checked, total = reach(mix)
    assert (cov.in_threads, total) == (8, 10)
    # the thread-unsafe test and the baseline failure fail with the GIL on: not checked; the race is
    assert checked == cov.checked == cov.in_threads - 2
    # (its race and its thread-unsafe test were never re-run alone: not claimed, issue #47)
    assert {f.kind for f in d.findings} >= {"unconfirmed", "baseline-failure"}
    watchdog = load_phases("repeat-watchdog")  # watchdog 7.1.1: pytest-run-parallel ran it single-threaded
    assert reach(watchdog) == (0, 74)
    assert reach_text(*reach(watchdog))["text"] == "nothing checked in threads: 0 of 74"
    unsafe = load_phases("allunsafe")
    assert reach(unsafe) == (0, 3)
    assert reach_text(*reach(unsafe)) == {"text": "nothing checked in threads: 0 of 3", "low": True, "checked": 0}
    ms = next(r for r in _docker(tests=True) if r.package == "markupsafe")
    assert reach(ms.phases) == (76, 79)  # 3 run single-threaded by pytest-run-parallel
    assert reach_text(76, 79) == {"text": "checked in threads: 76 of 79", "low": False, "checked": 76}
    assert reach_text(12, 480)["text"] == "only 12 of 480 checked in threads"
    assert reach_text(None, 0) is None and reach_text(None, 5)["text"] == "checked in threads: unknown"


def test_report_json_has_the_reach_of_each_job_and_cell():
    ms = next(r for r in _docker(tests=True) if r.package == "markupsafe")
    cov = decide(ms.phases, settings=Settings()).coverage  # as the job computes it now
    rep = aggregate.build_report([dataclasses.replace(ms, coverage=cov)], meta={})
    doc = json.loads(json.dumps(rep.to_dict()))
    assert doc["packages"][0]["reach"] == {"checked": 76, "tests": 79}
    (cell,) = doc["table"][0]["cells"].values()
    assert cell["reach"] == {"checked": 76, "tests": 79} and cell["answer"] == "no-ft-problem"
    assert doc["answers"]["no-ft-problem"] == 1 and doc["schema"] == REPORT_SCHEMA


def test_a_targeted_result_claims_no_gil_on_run(tmp_path: Path):
    """gil_on: targeted with nothing red with the GIL off: no GIL-on run; the compatible page
    says so, and never that the runs behaved the same with the GIL on."""
    ms = next(r for r in _docker(tests=True) if r.package == "markupsafe")
    off = [p for p in ms.phases if p.gil != 1]
    settings = Settings()
    assert settings.gil_on == "targeted"
    sel = select(off, settings)
    assert sel.ran == "none"
    d = decide(off, settings=settings)
    assert d.verdict == "compatible"
    r = dataclasses.replace(
        ms,
        phases=tuple(off),
        verdict=d.verdict,
        findings=d.findings,
        coverage=d.coverage,
        gil_on=GilOn(ran=sel.ran, why=sel.why),
    )
    rep = aggregate.build_report([r], meta={})
    rows = html.index_rows(rep)
    page = html.render_page(rep, rows[0], {}, None)
    ran = page.split('<p class="ran">')[1].split("</p>")[0]
    assert "With the GIL off: 1 plain run and 3 threaded runs of the suite." in ran
    assert "No run with the GIL on: nothing failed, crashed or hung" in ran
    assert "With the GIL on" not in ran and "same with the GIL on" not in page
    md = markdown.render(rep)
    assert "No run with the GIL on: nothing failed" in md and "With the GIL on:" not in md
    # the same job with its GIL-on runs: both modes named, and only then "the same"
    full = aggregate.build_report([ms], meta={})
    page = html.render_page(full, html.index_rows(full)[0], {}, None)
    assert "With the GIL on: 1 plain run and 3 threaded runs of the suite." in page
    assert "Every run behaved the same with the GIL on and off." in page


def test_findings_of_one_kind_and_file_are_grouped_with_their_count_the_deciding_one_first():
    rep = full_report(with_previous=False, hostile=False)
    p = next(p for p in rep.packages if p.job_id == "cp313t--fx-thread-unsafe")
    lead = p.findings[0]
    many = tuple(dataclasses.replace(lead, test_id=f"tests/test_state.py::test_case_{i:02d}") for i in range(40))
    big = dataclasses.replace(p, findings=many)
    rep = dataclasses.replace(rep, packages=tuple(big if q.job_id == p.job_id else q for q in rep.packages))
    md = markdown.render(rep)
    sec = md.split("### 🧵 fx-thread-unsafe 0.1 — thread-unsafe")[1].split("\n### ")[0]
    assert "**40 tests in tests/test\\_state.py fail in threads in both modes** (the first in full)" in sec
    assert sec.count("**Reproduce on your machine:**") == 1  # the repetitions are cut ...
    assert "test_case_05" in sec and "test_case_06" not in sec
    assert "… and 34 more findings like these" in sec
    # ... never a package's deciding finding: every job that has one shows it with its recipe
    for q in rep.packages:
        f = next((f for f in q.findings if f.kind == q.verdict), None)
        if f is not None and f.recipe:
            assert f.recipe.splitlines()[-1] in md, q.job_id
    page = html.render_page(rep, next(r for r in html.index_rows(rep) if r["p"].job_id == p.job_id), {}, None)
    assert page.count('class="finding') == 1 and "the other 39 of them" in page


@pytest.mark.parametrize(
    ("test_id", "short"),
    [
        (
            "tests/test_idna.py::CLIVersionTests::test_version_output_is_the_package_version",
            "CLIV…::test_version_output_is_the_package_version",
        ),  # the class cut, the function whole
        ("tests/test_idna.py::CLIVersionTests::test_version", "CLIVersionTests::test_version"),
        ("tests/test_x.py::AVeryLongTestCaseClassNameIndeed::test_y", "AVeryLongTestCaseClassN…::test_y"),
        ("tests/test_buf.py::test_shared_buffer", "test_shared_buffer"),
    ],
)
def test_a_test_function_name_is_shown_whole(test_id, short):
    assert shorten(test_id) == short
    assert test_id.rsplit("::", 1)[1] in shorten(test_id)


def test_runs_are_labelled_with_their_modes():
    race = Finding(kind="ft-race", test_id="t", modes=(0,), count=2, runs=3)
    assert runs_label(race, {0: 3, 1: 3}) == "2/3 off · 0/3 on"
    unsafe = Finding(kind="thread-unsafe", test_id="t", modes=(0, 1), count=6, runs=6)
    assert runs_label(unsafe, {0: 3, 1: 3}) == "3/3 off · 3/3 on"
    assert runs_label(dataclasses.replace(unsafe, count=5), {0: 3, 1: 3}) == "5/6 off and on together"
    confirmed = dataclasses.replace(race, confirmed={"gil0": "4/5", "gil1": "0/5"})
    assert runs_label(confirmed, {0: 3, 1: 3}) == "2/3 off · 0/3 on; alone 4/5 off · 0/5 on"


def test_blocked_by_lists_only_causes_outside_the_package_and_is_hidden_when_there_are_none():
    """tomli's "no tests in the sdist" is a fact about tomli: no cause; cffi's own refusal roots
    in cffi itself: none either; so the docker run's index has no "Blocked by" at all."""
    rep = aggregate.build_report(_docker(), meta={})
    assert {p.name: p.verdict for p in rep.packages}["tomli"] == "no-tests"
    assert rep.causes == ()
    index = html.render_index(rep, html.index_rows(rep))
    assert 'id="blocked"' not in index and "Blocked by" not in index
    assert "## Blocked by" not in markdown.render(rep)
    full = full_report()
    assert [c.kind for c in full.causes] == ["infrastructure"]  # idna's install timeout: the harness's
    index = html.render_index(full, html.index_rows(full))
    hero = index.split('<section class="hero">')[1].split("</section>")[0]
    assert 'href="#blocked"' not in hero  # not the header's only link any more


def test_a_package_page_names_the_other_interpreters_with_the_same_finding():
    rep = full_report()
    rows = {r["p"].job_id: r for r in html.index_rows(rep)}
    page = html.render_page(rep, rows["cp313t--msgpack"], {}, None)
    assert '<p class="also muted">The same finding on 3.13.15t.</p>' in page
    page = html.render_page(rep, rows["cp313t--fx-race"], {}, None)  # compatible on 3.13.15t
    assert "The same finding on" not in page


@pytest.mark.parametrize(
    ("case", "verdict", "answer", "caveat"),
    [
        # six 1.17.0 on docker (captured): its tests touch sys.modules from several threads, and fail
        # so with the GIL on as well: works without the GIL as with it, with the caveat
        ("confirm-six-docker", "thread-unsafe", "no-ft-problem", "fails in threads with the GIL too"),
        ("confirm-sharedbuf", "ft-race", "ft-problem", ""),
        ("confirm-realloc", "ft-crash", "ft-problem", ""),
        ("confirm-deadlock", "hang", "both-modes", "hangs with the GIL on too"),
        # its race and its thread-unsafe test were never re-run alone, so neither is claimed (issue
        # #47): its plain failure with the GIL on decides
        ("mix", "baseline-failure", "no-ft-problem", "fails without threads too"),
        ("allunsafe", "compatible", "no-ft-problem", "nothing checked in threads: 0 of 3"),
    ],
)
def test_the_answer_on_captured_runs(case, verdict, answer, caveat):
    from harness.core.model import InterpreterInfo, JobResult

    phases = load_phases(case)
    d = decide(phases, settings=Settings())
    r = JobResult(
        job_id=f"cp313t--{case}",
        key="k",
        package=case,
        version="1.0",
        interpreter=InterpreterInfo(name="cp313t", version="3.13.5", key="i"),
        phases=tuple(phases),
        verdict=d.verdict,
        qualifier=d.qualifier,
        findings=d.findings,
        coverage=d.coverage,
    )
    rep = aggregate.build_report([r], meta={})
    (cell,) = rep.table[0].cells.values()
    assert (cell.verdict, cell.answer, cell.caveat) == (verdict, answer, caveat)
    assert rep.answers[answer] == 1


def test_what_ran_says_when_the_gil_on_runs_had_only_the_red_tests():
    from harness.render.findings import what_ran

    p = next(p for p in full_report().packages if p.job_id == "cp313t--fx-race")
    why = "1 test(s) failed, crashed or hung in the 4 GIL-off runs; only they decide a mode"
    targeted = dataclasses.replace(p, gil_on=GilOn(ran="tests", tests=1, why=why))
    assert what_ran(targeted) == (
        "With the GIL off: 1 plain run and 3 threaded runs of the suite. With the GIL on: 1 plain "
        f"run and 3 threaded runs of only the 1 test(s) that were red with it off (settings.gil_on: "
        f"targeted): {why}."
    )
    assert "of the suite." in what_ran(p).split("With the GIL on")[1]  # gil_on not recorded: the suite


def test_a_clean_page_says_what_its_runs_rule_out():
    # issue #47: compatible after 3 threaded runs cannot see a failure of 1 run in 8; the page says so
    from harness.render.findings import what_ran
    from harness.results.report import JobEntry, JobInterpreter, PhaseRow
    from harness.util.stats import bound_text

    text = bound_text(3, "threaded runs with the GIL off")
    p = JobEntry(
        job_id="j",
        interpreter=JobInterpreter(name="a"),
        verdict="compatible",
        rules_out=text,
        phases=tuple(
            PhaseRow(name=f"threads-gil0-r{r}", kind="threads", gil=0, rep=r, outcome="ok") for r in (1, 2, 3)
        ),
    )
    said = what_ran(p)
    assert said.endswith(
        "What these runs rule out: 0 failures in 3 threaded runs with the GIL off: a "
        "per-run failure rate above 63% would have shown (95%)."
    )


def test_a_compatible_whose_threaded_runs_were_planned_says_what_they_covered() -> None:
    """#58: a job planned to its budget states its reach in its cell (and report.json keeps the plan)."""
    from harness.core.threadplan import ThreadPlan
    from harness.results.answer import answer

    rep = full_report()
    clean = next(p for p in rep.packages if p.verdict == "compatible")
    assert answer(clean).caveat == "" or "planned" not in answer(clean).caveat
    plan = ThreadPlan(
        how="sampled", tests=302, in_threads=128, iterations={1: 128}, threads={2: 128}, left_out=174, seed="2026-W50"
    )
    got = answer(dataclasses.replace(clean, thread_plan=plan)).caveat
    assert (
        "planned to the job's budget: 128 of 302 tests in threads (tests × iterations: 128 × 1; tests × threads: 128 × 2)"
        in got
    )
    assert "174 left out by a sample (seed 2026-W50)" in got
    whole = ThreadPlan(how="whole", tests=302, in_threads=302, iterations={5: 302})
    assert "planned" not in answer(dataclasses.replace(clean, thread_plan=whole)).caveat
    back = type(clean).from_dict(dataclasses.replace(clean, thread_plan=plan).to_dict())
    assert back.thread_plan == plan
