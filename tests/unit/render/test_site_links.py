"""site/ stands alone (#16): every href/src of every page resolves to a file inside site/.

The site is built from captured real runs (tests/data/report: real logs of the free-threaded
3.13.5 build) and checked with tools/check_site_links.py, the checker CI can run on a
published site; the checker itself is shown to catch each kind of broken link.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness import render
from harness.render import bugs as bug_pages
from harness.render import site as site_files
from harness.results import aggregate, feed
from harness.results.load import load_results
from harness.results.report import CompatReport
from tests.data.report.shared import DATA, full_report, out_dir

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("check_site_links", ROOT / "tools/check_site_links.py")
assert _spec and _spec.loader
checker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checker)
check_site = checker.check_site


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, CompatReport]:
    out = out_dir(tmp_path_factory.mktemp("links"))
    rep = full_report()
    render.write_all(rep, out)
    return out, rep


def test_the_site_of_a_real_run_stands_alone(built):
    out, rep = built
    assert check_site(out / "site") == []
    pages = list((out / "site").rglob("*.html"))
    bugs = bug_pages.pages(feed.build(rep)[0])  # the bugs pages: all, one per kind, one per interpreter line
    assert len(pages) == 1 + len(rep.packages) + len(bugs) and len(bugs) > 2
    # ... also once moved away from the output dir it was rendered in (what Pages publishes)
    alone = out.parent / "published"
    shutil.copytree(out / "site", alone)
    shutil.rmtree(out / "work")
    try:
        assert check_site(alone) == []
    finally:
        shutil.copytree(DATA / "run1" / "work", out / "work")


def test_the_report_and_a_json_per_package_are_in_the_site(built):
    out, rep = built
    site = out / "site"
    assert (site / "report.json").read_text() == (out / "report.json").read_text()
    index = json.loads((site / "packages.json").read_text())
    assert index["schema"] == site_files.API_SCHEMA and index["report"] == "report.json"
    assert [e["name"] for e in index["packages"]] == [t.name for t in rep.table]
    for entry in index["packages"]:
        doc = json.loads((site / entry["file"]).read_text())
        assert doc["name"] == entry["name"] and doc["row"]["verdict"] == entry["verdict"]
        assert doc["jobs"] == [p.to_dict() for p in rep.packages if p.name == entry["name"]]
        assert doc["row"] == next(t.to_dict() for t in rep.table if t.name == entry["name"])
        for job_id, where in doc["site"].items():
            assert (site / where["page"]).is_file()
            assert all((site / f).is_file() for f in where["logs"].values()), job_id
    race = json.loads((site / "packages/fx-race.json").read_text())
    assert race["row"]["across"].endswith(
        ": not a difference the runs hold: ft-race on 3.13.5t, compatible on 3.13.15t"
    )
    assert {j["interpreter"]["name"] for j in race["jobs"]} == {"cp313t", "cp31315t"}
    assert site_files.package_file("Foo_Bar.baz") == "packages/foo-bar-baz.json"
    bad = site_files.package_file("../../etc").removeprefix("packages/")
    assert "/" not in bad and not bad.startswith(".")


def test_every_kept_log_is_the_real_one_and_pages_link_it(built):
    out, rep = built
    site = out / "site"
    logs = sorted(site.glob("logs/*/*.txt"))
    assert len(logs) >= 20
    doc = json.loads((site / "packages/fx-ft-crash.json").read_text())
    kept = doc["site"]["cp313t--fx-ft-crash"]["logs"]
    assert kept["work/cp313t--fx-ft-crash/logs/plain-gil0.log"] == "logs/cp313t--fx-ft-crash/plain-gil0.log.txt"
    text = (site / kept["work/cp313t--fx-ft-crash/logs/plain-gil0.log"]).read_text()
    assert "Fatal Python error: Segmentation fault" in text
    page = (site / "pkg/cp313t--fx-ft-crash.html").read_text()
    assert 'href="../logs/cp313t--fx-ft-crash/plain-gil0.log.txt"' in page
    assert 'href="../report.json"' in page and 'href="../packages/fx-ft-crash.json"' in page
    assert "../../work/" not in page and 'href="../../' not in page


def test_the_site_of_a_real_docker_run_stands_alone_with_every_log(tmp_path):
    """Results and logs captured from the default matrix on docker (tests/data/report/docker)."""
    out = tmp_path / "out"
    shutil.copytree(DATA / "docker", out)
    results, problems = load_results([out])
    assert problems == [] and len(results) == 5
    rep = aggregate.build_report(results, meta={})
    assert {p.job_id: p.verdict for p in rep.packages} == {
        "cpython3.13t--cffi": "build-failure",
        "cpython3.13.15t--cffi": "build-failure",
        "cpython3.13t--tomli": "no-tests",
        "cpython3.13.15t--tomli": "no-tests",
        "cpython3.13t--markupsafe": "compatible",
    }
    render.write_all(rep, out)
    published = tmp_path / "published"
    shutil.copytree(out / "site", published)
    assert check_site(published) == []
    on_disk = {str(f.relative_to(out)) for f in (out / "work").rglob("*") if f.is_file()}
    linked = {rel for p in rep.packages for ph in p.phases for rel in (ph.log, ph.junit) if rel}
    assert linked == on_disk and len(linked) == 30  # every log and JUnit file of the run
    doc = json.loads((published / "packages/markupsafe.json").read_text())
    kept = doc["site"]["cpython3.13t--markupsafe"]["logs"]
    assert len(kept) == 20  # 12 logs + 8 JUnit files
    for rel, copy in kept.items():
        assert (published / copy).read_bytes() == (out / rel).read_bytes(), rel
    page = (published / "pkg/cpython3.13t--markupsafe.html").read_text()
    assert page.count('href="../logs/cpython3.13t--markupsafe/') == 20


def _page(site: Path, rel: str, body: str) -> None:
    (site / rel).parent.mkdir(parents=True, exist_ok=True)
    (site / rel).write_text(f"<!doctype html><html><body>{body}</body></html>")


def test_the_checker_names_each_kind_of_broken_link(tmp_path):
    site = tmp_path / "site"
    (tmp_path / "outside.log").write_text("x")
    _page(
        site,
        "index.html",
        '<a id="top" href="#top">t</a><a href="pkg/a.html#f1">a</a>'
        '<a href="https://pypi.org/project/x/">out</a><a href="report.json">r</a>',
    )
    (site / "report.json").write_text("{}")
    _page(
        site,
        "pkg/a.html",
        '<p id="f1"></p><a href="../index.html">up</a>'
        '<a href="../../outside.log">old log link</a><a href="../report.json">r</a>'
        '<a href="/report.json">abs</a><a href="javascript:alert(1)">js</a>'
        '<img src="data:image/png;base64,AA"><a href="../missing.log">gone</a>'
        '<a href="../index.html#nope">frag</a><a href="#nowhere">here</a>'
        '<a href="../link.txt">link</a><a href="//evil.example/x">proto-relative</a>',
    )
    os.symlink(tmp_path / "outside.log", site / "link.txt")
    problems = check_site(site)
    by_value = {p.split('"')[1]: p.split('": ', 1)[1] for p in problems}
    assert by_value == {
        "../../outside.log": "outside the site",
        "/report.json": "an absolute path: outside the site once published under a project URL",
        "javascript:alert(1)": "a javascript URL, not a file of the site",
        "data:image/png;base64,AA": "a data URL, not a file of the site",
        "../missing.log": "no such file in the site",
        "../index.html#nope": "no id 'nope' on index.html",
        "#nowhere": "no id 'nowhere' on this page",
        "../link.txt": "a symlink out of the site",
        "//evil.example/x": "a network-path URL, not a file of the site",
    }
    assert all(p.startswith("pkg/a.html: ") for p in problems)
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools/check_site_links.py"), str(site)], capture_output=True, text=True
    )
    assert run.returncode == 1 and len(run.stdout.splitlines()) == 9
    assert "2 pages, 9 broken link(s)" in run.stderr


def test_logs_are_cut_to_the_limit_and_the_budget(tmp_path):
    out = out_dir(tmp_path)
    rep = full_report()
    big = out / "work/cp313t--fx-race/logs/threads-gil0-r1.log"
    real = big.read_bytes()
    big.write_bytes(b"HEAD\n" + b"x" * 500_000 + real)  # the real tail after 500 KB of noise
    kept = site_files.publish_logs(rep, out, out / "site", limit=64 * 1024)
    copy = (out / "site" / kept["work/cp313t--fx-race/logs/threads-gil0-r1.log"]).read_bytes()
    assert len(copy) < 64 * 1024 + 200 and copy.startswith(b"HEAD\n")
    assert copy.endswith(real[-1000:])  # the tail (the failures, the summary) is kept
    assert b"the whole log is work/cp313t--fx-race/logs/threads-gil0-r1.log in the run" in copy
    # a budget for all logs: the most severe jobs' logs first, the rest not kept
    small = site_files.publish_logs(rep, out, out / "site", budget=8 * 1024)
    total = sum(f.stat().st_size for f in (out / "site/logs").rglob("*.txt"))
    assert 0 < total <= 8 * 1024 and len(small) < len(kept)
    assert any("fx-ft-crash" in k for k in small) and not any("attrs" in k for k in small)
    render.write_all(rep, out)  # pages say "not kept" where the budget left a log out
    assert check_site(out / "site") == []


def test_a_planted_link_in_the_workspace_is_never_published(tmp_path):
    out = out_dir(tmp_path)
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST SECRET\n")
    log = out / "work/cp313t--fx-crash/logs/plain-gil0.log"
    log.unlink()
    log.symlink_to(secret)  # package code could leave this in its workspace
    logs_dir = out / "work/cp313t--fx-race/logs"
    shutil.move(logs_dir, tmp_path / "elsewhere")
    logs_dir.symlink_to(tmp_path / "elsewhere")  # ... or make its logs dir a link
    kept = site_files.publish_logs(full_report(), out, out / "site")
    assert "work/cp313t--fx-crash/logs/plain-gil0.log" not in kept
    assert not any(k.startswith("work/cp313t--fx-race/") for k in kept)
    assert "work/cp313t--fx-crash/logs/probe.log" in kept  # its regular files still are
    for f in (out / "site").rglob("*"):
        assert not f.is_symlink()
        assert not f.is_file() or b"HOST SECRET" not in f.read_bytes()


def test_a_second_render_replaces_the_site_files_whole(tmp_path):
    out = out_dir(tmp_path)
    render.write_all(full_report(), out)
    assert (out / "site/packages/fx-race.json").is_file()
    rep = full_report()
    rep = replace(
        rep,
        packages=tuple(p for p in rep.packages if p.name != "fx-race"),
        table=tuple(t for t in rep.table if t.name != "fx-race"),
    )
    render.write_all(rep, out)
    assert not (out / "site/packages/fx-race.json").exists()
    assert not (out / "site/logs/cp313t--fx-race").exists()
    assert not list((out / "site").glob(".*"))  # no temp dir left behind
    assert check_site(out / "site") == []


def test_a_log_that_is_not_utf8_is_published_as_utf8(tmp_path):
    out = out_dir(tmp_path)
    log = out / "work/cp313t--fx-crash/logs/plain-gil0.log"
    log.write_bytes(b"before \xff\xfe after\n")
    kept = site_files.publish_logs(full_report(), out, out / "site")
    copy = (out / "site" / kept["work/cp313t--fx-crash/logs/plain-gil0.log"]).read_bytes()
    assert copy.decode("utf-8") == "before \ufffd\ufffd after\n"


def test_the_bugs_pages_filter_by_kind_and_interpreter_without_script(built):
    out, rep = built
    site = out / "site"
    assert 'href="bugs/index.html"' in (site / "index.html").read_text()
    found = feed.build(rep)[0]
    every = (site / "bugs" / "index.html").read_text()
    assert every.count("<tr data-kind=") == len(found.findings) == 9
    race = (site / "bugs" / "kind-ft-race.html").read_text()
    assert race.count('<tr data-kind="ft-race"') == 2 and race.count("<tr data-kind=") == 2
    assert (site / "bugs" / "on-3.13t.html").read_text().count('data-line="3.13t"') == 9
    assert 'href="kind-hang.html"' in race and 'href="on-3.13t.html"' in race  # the other filters, linked
    assert "&lt;script&gt;" in every and "<script>alert" not in every  # the hostile test id, as text
