"""The package page's issue to file (issue #57, acceptance 1), in a real headless Chromium.

On the site of run1's captured results (tests/data/report/run1: a GIL-off race, fx-race), the
package page has the issue text, the first failure in full and the runs that showed it; a click
on the issue's copy button puts the whole text on the clipboard: its versions block, its counts
per GIL mode, the full failure and the recipe with both GIL modes.
"""

from __future__ import annotations

import re

import pytest

from tests.integration.test_site_browser import ARGS, CHROMIUM, site, sync_api  # noqa: F401 - fixture

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def chromium():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


def test_the_copy_button_copies_the_whole_issue(site, chromium, tmp_path) -> None:  # noqa: F811
    out, _ = site
    ctx = chromium.new_context(
        viewport={"width": 1280, "height": 900}, permissions=["clipboard-read", "clipboard-write"]
    )
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto((out / "site/pkg/cp313t--fx-race.html").as_uri())
    issue = pg.locator("#issues article.issue").first
    assert issue.locator("h3").inner_text().startswith("tests/test_buf.py::test_shared_buffer fails in threads")
    shown = issue.locator("pre.issue-text").inner_text()
    button = issue.locator("button.copy")
    button.click()
    pg.wait_for_function("b => b.textContent === 'copied'", arg=button.element_handle(), timeout=5000)
    copied = pg.evaluate("navigator.clipboard.readText()")
    assert copied.strip() == shown.strip()
    versions = copied[copied.index("### Versions") : copied.index("### What happened")]
    assert "CPython 3.13.5 (free-threaded)" in versions and "pytest-run-parallel 0.10.0" in versions
    assert re.search(r"^- GIL off \(PYTHON_GIL=0\): failed in \d+ of \d+ threaded suite runs", copied, re.M)
    assert re.search(r"^- GIL on \(PYTHON_GIL=1\): ", copied, re.M)
    failure = issue.locator("pre.failure").inner_text()
    assert failure.strip() and failure.strip() in copied  # the failure in full, in the text
    assert "### How to reproduce" in copied and "PYTHON_GIL=0" in copied and "PYTHON_GIL=1" in copied
    assert re.search(r"for i in \$\(seq 1 \d+\); do", copied)
    assert errors == []
    ctx.close()


def test_a_hangs_page_quotes_the_timeout_and_its_stacks_in_full(site, chromium) -> None:  # noqa: F811
    out, _ = site
    ctx = chromium.new_context()
    pg = ctx.new_page()
    pg.goto((out / "site/pkg/cp313t--fx-hang.html").as_uri())
    issue = pg.locator("#issues article.issue").first
    failure = issue.locator("pre.failure").inner_text()
    assert "Failed: Timeout (>5.0s) from pytest-timeout" in failure and "~ Stack of <unknown>" in failure
    ctx.close()
