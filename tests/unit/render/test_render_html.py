"""harness.render.html and write_all: the static site, its escaping, CSP and links."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness import render
from harness.render import html
from harness.results.report import CompatReport
from tests.data.report.shared import XSS, XSS2, full_report, out_dir

STATIC = Path(html.__file__).parent / "static"
TEMPLATES = Path(html.__file__).parent / "templates"


class Doc(HTMLParser):
    """Elements and their attributes, and the page's visible text."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        (self.scripts if self._in_script else self.text).append(data)

    def all(self, tag: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.elements if t == tag]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, CompatReport, list[Path]]:
    tmp = tmp_path_factory.mktemp("site")
    out = out_dir(tmp)
    rep = full_report()
    return out, rep, render.write_all(rep, out)


def test_write_all_writes_every_format(site):
    out, rep, written = site
    names = {str(p.relative_to(out)) for p in written}
    assert {"report.json", "report.md", "junit.xml", "site/index.html", "site/history.json"} <= names
    assert {f"site/pkg/{p.job_id}.html" for p in rep.packages} <= names
    assert json.loads((out / "report.json").read_text()) == rep.to_dict()
    assert CompatReport.from_dict(json.loads((out / "report.json").read_text())) == rep
    assert not list(out.rglob(".*.tmp"))  # atomic writes leave no temp files


def test_index_has_a_row_per_package_and_a_cell_per_interpreter(site):
    out, rep, _ = site
    doc = Doc((out / "site/index.html").read_text())
    rows = {a["data-package"]: a["data-verdict"] for a in doc.all("tr") if a.get("data-package")}
    assert rows == {t.name: t.verdict for t in rep.table} and len(rows) == 13
    assert rows["fx-race"] == "ft-race"  # its most severe cell
    cells = {a["data-job"]: a["data-verdict"] for a in doc.all("td") if a.get("data-job")}
    assert cells == {p.job_id: p.verdict for p in rep.packages} and len(cells) == 16
    heads = [a["data-interp"] for a in doc.all("th") if a.get("data-interp")]
    assert heads == ["cp313t", "cp31315t"]
    tds = [a for a in doc.all("td") if a.get("data-interp")]
    assert len(tds) == 2 * 13  # every row has both columns, "not run" where it did not run
    assert sum(1 for a in tds if "none" in (a.get("class") or "")) == 13 - 3
    options = {a["value"] for a in doc.all("option")}
    assert {"cp313t", "cp31315t"} <= options  # the interpreter filter
    text = " ".join(doc.text)
    assert "ft-race on 3.13.5t, compatible on 3.13.15t" in text
    assert "13 packages" in text and "on 2 interpreters (16 jobs)" in text
    links = {a["href"] for a in doc.all("a")}
    assert {f"pkg/{p.job_id}.html" for p in rep.packages} <= links
    chips = {a["data-filter"] for a in doc.all("button") if "data-filter" in a}
    assert chips == {""} | {v for v, n in rep.summary.items() if n}
    text = " ".join(doc.text)
    assert "Changes since the previous report" in text and "flaky (counts do not hold)" in text
    assert "cp313t--lost" in text  # missing results are listed


def test_package_page_links_the_same_package_on_the_other_interpreters(site):
    out, _, _ = site
    doc = Doc((out / "site/pkg/cp31315t--fx-race.html").read_text())
    text = " ".join(doc.text)
    assert "On the other interpreters:" in text and "on 3.13.15t" in text
    assert "cp313t--fx-race.html" in {a["href"] for a in doc.all("a")}
    assert "debian:forky" in text
    alone = Doc((out / "site/pkg/cp313t--fx-crash.html").read_text())
    assert "On the other interpreters:" not in " ".join(alone.text)


def test_package_page_shows_findings_reproduce_interpreter_and_logs(site):
    out, rep, _ = site
    page = out / "site/pkg/cp313t--fx-ft-crash.html"
    doc = Doc(page.read_text())
    text = " ".join(doc.text)
    assert "tests/test_grow.py::test_concurrent_append" in text
    assert "Fatal Python error: Segmentation fault" in text
    assert "cd src && PYTHONFAULTHANDLER=1 PYTHON_GIL=0 venv/bin/python -P -m pytest" in text
    assert "3.13.5-3f1a9c2e-disable-gil" in text and "--disable-gil" in text
    assert "verdict changed" in text  # crash -> ft-crash since run0
    hrefs = [a["href"] for a in doc.all("a") if a["href"].startswith("../logs/")]
    # the site's own copy of the log (site/ stands alone, issue #16), served as text
    assert "../logs/cp313t--fx-ft-crash/plain-gil0.log.txt" in hrefs
    for h in hrefs:
        assert (page.parent / h).resolve().is_file()
    copy = (page.parent / "../logs/cp313t--fx-ft-crash/plain-gil0.log.txt").read_text()
    assert copy == (out / "work/cp313t--fx-ft-crash/logs/plain-gil0.log").read_text()
    assert "not kept" in text  # phases whose log is not on disk are not linked


def test_notes_links_and_project_urls(site):
    out, _, _ = site
    doc = Doc((out / "site/pkg/cp313t--msgpack.html").read_text())
    text = " ".join(doc.text)
    assert "Fixed upstream in 1.1.0 (declares Py_mod_gil)." in text
    assert "https://github.com/msgpack/msgpack-python/issues/613" in {a["href"] for a in doc.all("a")}
    assert "msgpack._cmsgpack" in text
    attrs = Doc((out / "site/pkg/cp313t--attrs.html").read_text())
    assert {"https://www.attrs.org/", "https://github.com/python-attrs/attrs"} <= {a["href"] for a in attrs.all("a")}
    # where its test setup came from (issue #14)
    attrs_text = " ".join(attrs.text)
    assert "Test setup" in attrs_text and "test deps from [dependency-groups] tests" in attrs_text


def test_hostile_input_is_text_everywhere(site):
    out, _, _ = site
    for page in (out / "site").rglob("*.html"):
        raw = page.read_text()
        assert XSS not in raw and "<img" not in raw and "onerror=alert" not in raw.replace("onerror=alert(1)&gt;", "")
        doc = Doc(raw)
        assert len(doc.all("script")) == 1 and doc.all("img") == []
        for attrs in (a for _, a in doc.elements):
            assert not any(k.startswith("on") for k in attrs), (page, attrs)
            for k in ("href", "src", "action"):
                assert not (attrs.get(k) or "").lower().startswith("javascript:"), (page, attrs)
    evil = Doc((out / "site/pkg/cp313t--evil.html").read_text())
    text = " ".join(evil.text)
    assert f"tests/test_x.py::test_{XSS}" in text and XSS2 in text
    assert "javascript:alert(1)" in text  # shown, not linked


def test_csp_allows_exactly_our_inline_css_and_js(site):
    out, _, _ = site
    raw = (out / "site/index.html").read_text()
    doc = Doc(raw)
    (meta,) = [a for a in doc.all("meta") if a.get("http-equiv") == "Content-Security-Policy"]
    csp = meta["content"]
    (script,) = doc.scripts
    js_hash = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{js_hash}'" in csp
    css = re.search(r"<style>(.*?)</style>", raw, re.S).group(1)
    css_hash = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
    assert f"style-src 'sha256-{css_hash}'" in csp and "default-src 'none'" in csp


def test_nothing_external_and_no_html_injection_in_our_code():
    js = (STATIC / "site.js").read_text()
    for bad in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert bad not in js
    for tpl in TEMPLATES.glob("*.html"):
        src = tpl.read_text()
        assert not re.search(r"\|\s*safe\b", src) and "autoescape false" not in src
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", src), tpl
    assert "@import" not in (STATIC / "site.css").read_text()
    assert "url(" not in (STATIC / "site.css").read_text()


def test_page_names_are_file_name_safe():
    assert html.page_name("cp313t--attrs") == "cp313t--attrs.html"
    assert html.page_name("../../x y") == "_.._x_y.html"
    assert "/" not in html.page_name("a/b")


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_forked_workers_write_the_same_site_as_one_process(tmp_path, monkeypatch):
    from harness.util import pool

    rep = full_report()
    serial, forked = out_dir(tmp_path / "a"), out_dir(tmp_path / "b")
    monkeypatch.setattr(pool, "PARALLEL_MIN", 10**9)
    render.write_all(rep, serial)
    if pool.workers() < 2 or threading.active_count() > 1:
        pytest.skip("one core, or threads alive: write_all renders in-process")
    monkeypatch.setattr(pool, "PARALLEL_MIN", 1)
    (forked / "site/pkg").mkdir(parents=True)
    (forked / "site/pkg/stale.html").write_text("a page from an older report")
    marks = tmp_path / "pids"
    marks.mkdir()
    real = html.render_page

    def spy(*a, **kw):
        (marks / str(os.getpid())).touch()
        return real(*a, **kw)

    monkeypatch.setattr(html, "render_page", spy)
    written = render.write_all(rep, forked)
    pids = {int(p.name) for p in marks.iterdir()}
    assert pids and os.getpid() not in pids  # the pages were rendered by forked workers
    assert _tree(serial / "site") == _tree(forked / "site")  # and the stale page is gone
    assert sorted(p.name for p in written if p.parent.name == "pkg") == sorted(f"{p.job_id}.html" for p in rep.packages)
    assert not [p for p in (forked / "site").iterdir() if p.name.startswith(".")]
