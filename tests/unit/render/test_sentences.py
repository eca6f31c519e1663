"""Issue #57: every sentence the report prints is backed by what ran (tests/data/report/sentences:
six 1.17.0 on 3.13.5t, a job the budget cut, captured from `nox -s matrix` on docker; six 1.17.0 on
3.13.15t and the ft_rarerace fixture on 3.13.5t, from `ft-harness run --backend local`)."""

from __future__ import annotations

import html as htmlmod
import re
from pathlib import Path

import pytest

from harness import render
from harness.render import html, markdown
from harness.results import aggregate
from harness.results.load import load_results
from harness.results.report import CompatReport
from harness.verdict.coverage import compute, reach
from tests.data.report.shared import DATA, full_report

SIX_CUT, SIX_15 = "cpython3.13t--six", "cpython3.13.15t--six"
RARE = "cpython3.13t--ft_rarerace"


def _report(*names: str, tests: bool = False) -> CompatReport:
    results, problems = load_results([DATA / n for n in names], tests=tests)
    assert problems == []
    return aggregate.build_report(results, meta={})


@pytest.fixture(scope="module")
def rep() -> CompatReport:
    return _report("sentences")


def _job(rep: CompatReport, job_id: str):
    return next(p for p in rep.packages if p.job_id == job_id)


def _visible(page: str) -> str:
    page = re.sub(r"(?s)<(style|script)[^>]*>.*?</\1>", " ", page)
    return " ".join(htmlmod.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _pages(rep: CompatReport) -> dict[str, str]:
    rows = html.index_rows(rep)
    return {"index": html.render_index(rep, rows), **dict(html.iter_pages(rep, {}, rows))}


def test_the_reach_of_a_job_the_budget_cut_says_so_and_counts_finished_runs(rep):
    """six on 3.13.5t: the budget killed threads-gil0-r3; "checked in threads: 183 of 184" was printed
    as if the job had been judged.  The reach comes from the runs that finished, and says the cut."""
    (r,) = [r for r in load_results([DATA / "sentences"], tests=True)[0] if r.job_id == SIX_CUT]
    finished = [p for p in r.phases if p.name != "threads-gil0-r3"]
    assert next(p for p in r.phases if p.name == "threads-gil0-r3").hang.spent
    assert r.coverage["gil0"].checked == 183  # as the job wrote it: the cut run counted
    assert reach(r.phases) == reach(finished) == (182, 183)  # now: r3's tests count for nothing
    cov = compute(r.phases)["gil0"]  # and the coverage counts the same runs
    assert (cov.in_threads, cov.total, cov.checked) == (182, 183, 182)
    assert (r.coverage["gil0"].in_threads, r.coverage["gil0"].total) == (183, 184)
    row = next(x for x in html.index_rows(rep) if x["p"].job_id == SIX_CUT)
    # the result keeps its own count (written before the fix); the words hold for either count
    said = "cut by the job's budget (2 of 3 GIL-off runs finished): 183 of 184 ran in threads"
    assert row["reach"] == {"text": said, "low": True, "checked": 183}
    pages = _pages(rep)
    for name in ("index", f"pkg/{SIX_CUT}.html"):
        text = _visible(pages[name])
        assert said in text and "checked in threads: 183 of 184" not in text, name
    # a job that finished keeps the plain words
    row15 = next(x for x in html.index_rows(rep) if x["p"].job_id == SIX_15)
    assert row15["reach"]["text"].startswith("checked in threads: ")


def test_no_not_again_without_a_re_run_and_no_once_for_a_test_that_failed_three_times(rep):
    six = _job(rep, SIX_CUT)
    lazy = next(f for f in six.findings if f.test_id == "test_six.py::test_lazy")
    assert (lazy.kind, lazy.count, lazy.runs, lazy.confirmed) == ("unconfirmed", 3, 3, {})
    md = markdown.render(rep)
    page = _visible(_pages(rep)[f"pkg/{SIX_CUT}.html"])
    said = "13 tests in test_six.py failed with the GIL off in some runs and were not re-run alone: unconfirmed"
    six_md = "".join(re.findall(r"(?s)\n### [^\n]* six 1\.17\.0 .*?(?=\n### |\n## )", md))
    assert said in page and said.replace("_", "\\_") in six_md
    for text in (six_md, page):
        assert "not again" not in text and "failed once" not in text
        # what ran says the third GIL-off threaded run did not finish
        assert "3 threaded runs of the suite (the job's budget cut 1 of them before it finished)." in text
    # where a test was run again alone, "not again" is what its runs say (ft_rarerace: 0/2, 0/2)
    assert "seen once (1/20 suite runs) and not again alone (0/2 with the GIL off" in md


def test_notes_from_matrix_yaml_are_dated_and_labelled_as_the_users(rep):
    six = _job(rep, SIX_CUT)
    assert six.notes.startswith("test_six.py::test_lazy asserts")
    label = "Note from matrix.yaml, 7 Dec 2026 (the matrix author's words, not a finding of this run):"
    md = markdown.render(rep)
    assert f"> **{label}** test\\_six.py::test\\_lazy asserts" in md and "**Note:**" not in md
    assert f"{label} test_six.py::test_lazy asserts" in _visible(_pages(rep)[f"pkg/{SIX_CUT}.html"])


def test_no_difference_across_interpreters_against_a_side_never_judged(rep):
    row = next(r for r in rep.table if r.name == "six")
    assert {c.verdict for c in row.cells.values()} == {"infra-error", "thread-unsafe"}
    said = "could not be compared: infra-error on 3.13.5t (not judged); thread-unsafe on 3.13.15t"
    assert row.across == said
    assert said in markdown.render(rep) and said in _visible(_pages(rep)["index"])
    # two judged sides still differ as before (run1: fx-race on both interpreters)
    fx = next(r for r in full_report().table if r.name == "fx-race")
    assert fx.across.endswith("ft-race on 3.13.5t, compatible on 3.13.15t"), fx.across


# an unfilled placeholder in words a reader sees: " N " (a number normalised away), "{x}", "{{",
# "None", "nan"
LEAK = re.compile(r"(?<![\w./<-])N(?![\w./>-])|\{\{|\}\}|\{[a-z_]*\}|\bNone\b|\bnan\b")


def _unfilled(text: str) -> list[str]:
    return [text[max(0, m.start() - 60) : m.end() + 40] for m in LEAK.finditer(text)]


@pytest.mark.parametrize("which", ["sentences", "run1+hostile", "docker"])
def test_every_template_and_sentence_is_filled(which, tmp_path):
    """Every page, report.md and the bugs pages, rendered from real results: no placeholder left
    ("Blocked by" printed "the job's budget (job_timeout N s)" for six)."""
    rep = full_report() if which == "run1+hostile" else _report(which)
    render.write_all(rep, tmp_path, step_summary=False)
    files = [p for p in tmp_path.rglob("*") if p.suffix in (".html", ".md")]
    assert len(files) > len(rep.packages)
    for path in files:
        text = path.read_text()
        if path.suffix == ".md":  # code is the runs' own output, quoted
            text = re.sub(r"`[^`]*`", " ", re.sub(r"(?s)```.*?```", " ", text))
        else:
            text = _visible(re.sub(r"(?s)<(pre|code)[^>]*>.*?</\1>", " ", text))
        assert _unfilled(text) == [], (path.relative_to(tmp_path), _unfilled(text))
    if which == "sentences":
        md = (tmp_path / "report.md").read_text()
        assert "the job's budget (job\\_timeout 1200 s) ran out during threads-gil0-r3" in md


def test_a_compatible_with_an_unconfirmed_finding_says_so_in_its_cell():
    """ft_rarerace: its test lost an update in 1 of 20 GIL-off suite runs and in none of its runs
    alone: compatible, and the cell says so in words (not only the badge's tooltip)."""
    rep = _report("sentences")
    p = _job(rep, RARE)
    assert p.verdict == "compatible" and p.answer == "no-ft-problem"
    said = "unconfirmed: a test failed 1/20 suite runs with the GIL off; alone 0/2 off, 0/2 on"
    assert p.caveat == said
    index = _pages(rep)["index"]
    assert f'<span class="caveat a-no-ft-problem">{said}</span>' in index
    md = markdown.render(rep)
    row = next(line for line in md.splitlines() if line.startswith("| ft\\_rarerace "))
    assert said in row


def test_the_site_is_written_for_the_sentences_run(tmp_path: Path):
    """The same data through write_all (what `ft-harness report` does): the index holds the caveat,
    the cut reach and the one-sided difference."""
    render.write_all(_report("sentences"), tmp_path, step_summary=False)
    text = _visible((tmp_path / "site/index.html").read_text())
    assert "unconfirmed: a test failed 1/20 suite runs" in text
    assert "cut by the job's budget" in text and "could not be compared" in text
