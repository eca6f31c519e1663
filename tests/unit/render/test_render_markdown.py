"""harness.render.markdown: the summary line, the table, findings (mdfindings), changes, escaping (mdtext)."""

from __future__ import annotations

import re

from harness import render
from harness.render import markdown, mdtext
from harness.results import aggregate
from harness.results.report import CompatReport
from tests.data.report.shared import XSS, XSS2, full_report, load, out_dir


def test_summary_line_counts_every_verdict_present():
    rep = full_report()
    line = markdown.summary_line(rep)
    # packages, not jobs: fx-race (ft-race on 3.13.5, compatible on 3.13.15) counts once
    assert line.startswith("**13 packages** on 2 interpreters (16 jobs): ")
    assert "🔀 2 ft-race" in line and "✅ 2 compatible" in line and "⛔ 1 build-failure" in line
    assert "hang" in line and "❓ 1 missing" in line
    assert "thread-unsafe" in line and "0 " not in line  # zero counts are left out


def test_packages_table_has_a_row_per_package_and_a_column_per_interpreter():
    rep = full_report()
    md = markdown.render(rep)
    table = md.split("## Packages\n\n")[1].split("\n\n")[0].splitlines()
    assert table[0] == "| Package | Version | 3.13.5t | 3.13.15t | Cause | Across interpreters |"
    assert table[1] == "|---|---|---|---|---|---|"
    assert len(table[2:]) == len(rep.table) == 13
    assert (
        "| fx-race | 0.1 | 🔀 **ft-race** ≈ flaky | ✅ **compatible** 🆕 new-package "
        "| ` test_shared_buffer ` 2/3 off · 0/3 on; alone 14/16 off · 0/16 on | flaky: "
        "\\`tests/test\\_buf.py::test\\_shared\\_buffer\\` 2/3 GIL-off runs on 3.13.5t, 0/3 on 3.13.15t "
        "(one-sided Fisher p = 0.20 &gt; 0.05): not a difference the runs hold: ft-race on 3.13.5t, "
        "compatible on 3.13.15t |"
    ) in table
    # not run on 3.13.15; its cause: a crash with the GIL on too, both modes' runs pooled
    assert (
        "| fx-crash | 0.1 | ☠️ **crash** | — | crashes with the GIL on too, ` test_crash ` 2/2 off "
        "and on together; alone 1/1 off · 1/1 on |  |"
    ) in table
    assert (
        "| msgpack | 1.0.5 | 🔒 **gil-reenabled** | 🔒 **gil-reenabled** 🆕 new-package | ` msgpack._cmsgpack ` |  |"
    ) in table
    assert "| fx-thread-unsafe | 0.1 | 🧵 **thread-unsafe** | — | fails in threads with the GIL too, " in md
    assert "| attrs [cp31315t] 25.3.0" not in md and "| attrs 25.3.0 [cp31315t] | new-package" in md


def test_one_interpreter_has_no_across_column():
    results = [r for r in load("run1") if r.interpreter.name == "cp313t"]
    md = markdown.render(aggregate.build_report(results, meta={}))
    assert "| Package | Version | 3.13t | Cause |\n|---|---|---|---|\n| attrs | 25.3.0 | ✅ **compatible** |" in md
    assert "Across" not in md and "### 🔀 fx-race 0.1 — ft-race\n" in md
    assert markdown.summary_line(aggregate.build_report(results, meta={})).startswith("**12 packages**: ")


def test_jobs_table_has_a_row_per_job_with_its_verdict():
    rep = full_report()
    md = markdown.render(rep)
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and " | cp313t | " in ln]
    assert len(rows) == 13 and len(rep.packages) == 16
    assert len([ln for ln in md.splitlines() if " | cp31315t | " in ln]) == 3
    for p in (p for p in rep.packages if p.interpreter.name == "cp313t"):
        (row,) = [r for r in rows if r.startswith(f"| {markdown.text(p.name)} |")]
        assert f"**{p.verdict}**" in row
    unsafe = next(r for r in rows if r.startswith("| fx-all-unsafe |"))
    assert "(low thread coverage: 0/8 tests in threads)" in unsafe
    assert "0/8 (0%)" in unsafe
    msgpack = next(r for r in rows if r.startswith("| msgpack |"))
    assert "no free-threaded wheel, built from sdist" in msgpack


def test_findings_show_test_id_modes_ratio_evidence_and_reproduce():
    md = markdown.render(full_report(with_previous=False, hostile=False))
    sec = md.split("### 🔀 fx-race 0.1 — ft-race · 3.13.5t")[1].split("###")[0]
    assert "**ft-race** ` tests/test_buf.py::test_shared_buffer `" in sec
    assert "GIL off (PYTHON_GIL=0), failed: 2/3 off · 0/3 on; alone 14/16 off · 0/16 on, evidence: junit" in sec
    assert "```sh\n  cd src && PYTHONFAULTHANDLER=1 PYTHON_GIL=0 venv/bin/python -P -m pytest" in sec
    assert "PARALLEL FAILED tests/test_buf.py::test_shared_buffer" in sec
    crash = md.split("ft-crash 0.1 — ft-crash")[1].split("###")[0]
    assert "signal 11" in crash and "Fatal Python error: Segmentation fault" in crash
    assert (
        "> **Note from matrix.yaml, 3 Dec 2026 (the matrix author's words, not a finding of this run):** Fixed upstream in 1.1.0"
        in md
    )
    assert "- <https://github.com/msgpack/msgpack-python/issues/613>" in md
    assert "## Changes" not in md


def test_changes_are_marked_when_previous_is_given():
    md = markdown.render(full_report())
    changes = md.split("## Changes since the previous report")[1].split("\n## ")[0]
    assert "| 🔁 **regression** | fx-hang 0.1 [cp313t] | verdict-changed | ft-race | hang |" in changes
    # compatible -> ft-race on 2/3 suite runs against 0/3: chance, never a regression (results.flaky)
    assert "| ≈  | fx-race 0.1 [cp313t] | flaky | compatible | ft-race |" in changes
    assert "| ➖  | simplejson 3.19.3 [cp313t] | removed | compatible | — |" in changes
    assert "| fx-race | 0.1 | cp313t | 🔀 **ft-race** |" in md
    assert md.count("≈ flaky") == 2  # fx-race: its cell and its job row
    assert md.count("🛠️ infra-error") >= 2  # idna became infra-error: listed apart (#16)


def test_hostile_text_is_inert():
    md = markdown.render(full_report())
    outside_code = re.sub(r"(?ms)^ *(`{3,}).*?^ *\1$", "", md)  # fenced blocks
    outside_code = re.sub(r"(`+) .*? \1", "", outside_code)  # code spans: literal in Markdown
    assert XSS not in outside_code and "<img" not in outside_code
    assert (
        "&lt;script&gt;alert\\(1\\)&lt;/script&gt;" in outside_code
        or "&lt;script&gt;alert(1)&lt;/script&gt;" in outside_code
    )
    assert "javascript:" not in md  # unsafe links are not linked
    assert XSS2 in md  # but the evidence is kept, inside a code fence


def test_code_survives_backticks_and_pipes():
    assert mdtext.code("a`b") == "`` a`b ``"
    assert mdtext.code("x|y") == "` x\\|y `"
    body = "```\nnot the end\n```"
    fenced = mdtext.block(body)
    assert fenced.startswith("````\n") and fenced.endswith("\n````")


def test_long_excerpts_are_cut_from_the_top():
    text = "\n".join(f"line {i}" for i in range(100))
    out = mdtext.block(text)
    assert "[... 60 earlier lines; see the log]" in out and "line 99" in out and "line 59\n" not in out


def test_write_all_appends_to_the_step_summary(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("previous step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    out = out_dir(tmp_path)
    render.write_all(full_report(), out)
    text = summary.read_text()
    assert text.startswith("previous step\n# Free-threaded compatibility report")
    assert text.endswith((out / "report.md").read_text())


def test_one_step_summary_per_run_with_the_site_link_and_regressions_first(tmp_path, monkeypatch):
    # issue #16: a shard writes none (its report is partial); the merged one links the site
    summary = tmp_path / "summary.md"
    summary.write_text("")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    render.write_all(full_report(), out_dir(tmp_path / "shard"), step_summary=False)
    assert summary.read_text() == ""
    render.write_all(full_report(), out_dir(tmp_path / "merged"), site_url="https://o.github.io/r/")
    text = summary.read_text()
    assert text.startswith("# Free-threaded compatibility report\n\n**The published table: <https://o.github.io/r/>**")
    assert text.count("The published table") == 1  # report.md links it; the summary adds none
    changes = text.split("## Changes since the previous report")[1].split("\n## ")[0]
    rows = [line for line in changes.splitlines() if line.startswith("| ") and "Package" not in line]
    marks = ["**regression**" in r for r in rows]
    assert marks == sorted(marks, reverse=True) and marks[0]  # every regression before the rest


def test_no_step_summary_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    written = render.write_all(full_report(), out_dir(tmp_path))
    assert all(p.exists() for p in written)


def test_step_summary_is_cut_under_the_limit(monkeypatch):
    monkeypatch.setattr(render, "STEP_SUMMARY_LIMIT", 2000)
    md = markdown.render(full_report())
    cut = render.step_summary(md)
    assert len(cut.encode()) < 2200 and "truncated for the step summary" in cut
    assert cut.count("```") % 2 == 0


def test_each_package_says_where_its_test_setup_came_from():
    # issue #14: inferred from the sdist, or matrix.yaml; the site's package page says the rest
    md = markdown.render(full_report())
    jobs = md.split("## Jobs")[1].split("\n## ")[0]
    assert "| Test setup |" in jobs.splitlines()[2]
    attrs = next(line for line in jobs.splitlines() if line.startswith("| attrs | 25.3.0 | cp313t |"))
    assert "| inferred |" in attrs
    assert md.count("| — |") >= 1  # results without a recorded setup say so


def _big_report(packages: int = 300) -> CompatReport:
    """``packages`` packages on two interpreters, each job a copy (dataclasses.replace) of one of
    run1's real results: every verdict, findings with evidence, ~8 phases a job."""
    import dataclasses

    base = load("run1")
    results = []
    for i in range(packages):
        for k, (name, version) in enumerate((("cp313t", "3.13.5"), ("cp31315t", "3.13.15"))):
            r = base[(i + 7 * k) % len(base)]
            it = dataclasses.replace(r.interpreter, name=name, version=version, full_version=version)
            results.append(dataclasses.replace(r, job_id=f"{name}--pkg{i:03d}", package=f"pkg{i:03d}", interpreter=it))
    return aggregate.build_report(
        results, meta={}, expected_jobs=[r.job_id for r in results] + [f"cp313t--lost{i}" for i in range(80)]
    )


def test_report_md_for_300_packages_stays_short_and_links_the_site():
    # issue #16: it was 8,000 lines with a 3,000-row phase table and no link to the site
    rep = _big_report()
    assert len(rep.table) == 300 and sum(len(p.phases) for p in rep.packages) > 3000
    md = markdown.render(rep, site_url="https://o.github.io/r")
    lines = md.splitlines()
    # every job's deciding finding with its recipe up to BRIEF_LINES (#44), then a line each
    assert len(lines) <= 2800 and len(md.encode()) <= 200_000, (len(lines), len(md.encode()))
    assert lines[2] == (
        "**The published table: <https://o.github.io/r/>** — every package's page with its phases, logs and JSON."
    )
    assert "Phase outcomes" not in md and "| Phase |" not in md
    table = md.split("## Packages\n\n")[1].split("\n\n")[0].splitlines()
    assert len(table) == 2 + 300  # every package is there, each linked to its page
    assert table[2].startswith("| [pkg000](https://o.github.io/r/pkg/cp313t--pkg000.html) |")
    findings = md.split("## Findings\n")[1].split("\n## ")[0]
    assert findings.count("\n### ") >= 10  # the most severe jobs in full, with evidence
    assert "<details><summary>Evidence</summary>" in findings
    assert "more jobs with findings" in findings and "more jobs: see report.json or the site" in findings
    assert "_… and 30 more missing jobs: see report.json or the site._" in md  # 80 missing, 50 listed
    assert "## Jobs" in md and "600 jobs: their thread coverage" in md  # the table is the site's
    assert render.step_summary(md) == md  # far under GitHub's step summary limit


def test_a_small_report_keeps_everything_in_full():
    md = markdown.render(full_report())
    assert "more job" not in md and "more finding" not in md  # nothing capped at 16 jobs
    jobs = [p for p in full_report().packages if p.findings or p.notes or p.links]
    titles = [line for line in md.splitlines() if line.startswith("### ")]
    labels = full_report().labels()
    for p in jobs:  # every job, a package's jobs that found the same under one title (#44)
        assert any(f" {markdown.text(p.name)} " in t and labels[p.interpreter.name] in t for t in titles), p.job_id
    assert "### 🔒 msgpack 1.0.5 — gil-reenabled · 3.13.5t and 3.13.15t" in titles
    assert len(titles) == len(jobs) - 1


def test_every_finding_shows_its_recipe_first_and_the_runners_command_folded():
    """#33: the ft-race fixture's recipe (pip install, PYTHON_GIL=0 ... pytest on its test), no
    path of the run's output; the exact command of the machine that ran it, folded below."""
    md = markdown.render(full_report(with_previous=False, hostile=False))
    sec = md.split("### 🔀 fx-race 0.1 — ft-race · 3.13.5t")[1].split("###")[0]
    recipe = sec.split("**Reproduce on your machine:**")[1].split("```sh\n")[1].split("```")[0]
    assert "python -m pip install . pytest==8.4.2" in recipe
    assert (
        "PYTHON_GIL=0 python -P -m pytest -p no:cacheprovider --timeout=120 -rfE -v "
        "--parallel-threads=4 --iterations=5 tests/test_buf.py::test_shared_buffer"
    ) in recipe
    assert "venv/bin" not in recipe and "work/" not in recipe and "junit" not in recipe
    assert sec.index("Reproduce on your machine") < sec.index(
        "<details><summary>The exact command on the machine that ran it</summary>"
    )
    # crash and ft-crash read apart
    assert markdown.ICON["crash"] != markdown.ICON["ft-crash"]


def test_mentions_and_bare_links_from_a_package_do_not_notify_or_link():
    """Moved from #30: a package's text in report.md mentions nobody and links nowhere."""
    cell = markdown.text("ping @octocat and @org/team, see www.example.com or https://evil.example")
    assert "@octocat" not in cell and "@org/team" not in cell
    assert "www.example.com" not in cell and "https://evil.example" not in cell
    assert cell == ("ping @<!-- -->octocat and @<!-- -->org/team, see www&#46;example.com or https&#58;//evil.example")
    # what we link ourselves stays a link
    md = markdown.render(full_report(with_previous=False, hostile=False), site_url="https://example.github.io/ft/")
    assert "<https://example.github.io/ft/>" in md


def test_a_gil_re_enabled_only_with_the_test_deps_is_a_note_in_report_md_and_on_the_page(tmp_path):
    # issue #57: aiohttp's tests install Brotli (its `speedups` extra); a plain install does not
    from dataclasses import replace

    from harness.core.proberecord import LaterGil

    later = LaterGil(module="_brotli", dist="Brotli", extra="speedups")
    results = [replace(r, gil_with_test_deps=(later,)) if r.package == "fx-thread-unsafe" else r for r in load("run1")]
    rep = aggregate.build_report(results, meta={})
    md = markdown.render(rep)
    assert (
        "Only with the test dependencies installed: with the ` speedups ` extra: Brotli's ` _brotli ` "
        "re-enables the GIL (` pip install fx-thread-unsafe ` does not)."
    ) in md, md
    out = out_dir(tmp_path)
    render.write_all(rep, out)
    page = next((out / "site" / "pkg").glob("cp313t--fx-thread-unsafe.html")).read_text()
    assert "with the <code>speedups</code> extra: Brotli's <code>_brotli</code> re-enables the GIL" in page
