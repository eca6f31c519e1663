"""Regenerate the README's screenshots from a run's output, with the current code (issue #44).

    python tools/screenshots.py OUT [--name screenshot-default-matrix] [--docs docs]

OUT is a run's output dir (its results/ and work/, as `ft-harness run` leaves them).  Its report
is rendered again by this checkout (`ft-harness report OUT --out TMP`: the verdicts are the
result files', the pages today's), then opened in Debian's headless Chromium through playwright
(never `playwright install`; FT_HARNESS_CHROMIUM names another binary), and three screenshots
are written to docs/:

- NAME.png: the index's first screen at 1400 x 1000 (the question, the counts, the table);
- NAME-phone.png: the same at 420 x 900;
- NAME-package.png: the first screen of the page of the table's first row (its most serious
  package) at 1400 x 1000;
- NAME-issue.png: the first row's page with an upstream-ready issue (#57), at that issue.

Each is checked for size (an empty page is a few KiB) before it replaces the old one; the
script prints what it wrote and the run it came from (the report's meta), to cite beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DESKTOP, PHONE = {"width": 1400, "height": 1000}, {"width": 420, "height": 900}
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
MIN_BYTES = 20_000


def render(out: Path, tmp: Path) -> Path:
    """``out``'s results rendered by this checkout into a copy of it under ``tmp`` (its results
    and work/: the logs and JUnit files the pages link and the issues quote); returns its site/."""
    copy = tmp / "out"
    shutil.copytree(out, copy, symlinks=True, ignore=shutil.ignore_patterns("site", "venv", "src", "tmp"))
    subprocess.run(
        [sys.executable, "-m", "harness", "report", str(copy), "--out", str(copy)],
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    return copy / "site"


def shoot(site: Path, docs: Path, name: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("FT_HARNESS_CHROMIUM", "/usr/bin/chromium")
    shots: list[tuple[str, dict[str, int], str]] = [
        ("index.html", DESKTOP, f"{name}.png"),
        ("index.html", PHONE, f"{name}-phone.png"),
    ]
    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        page = browser.new_page(viewport=DESKTOP)
        page.goto((site / "index.html").as_uri())
        first = page.locator("#packages tbody tr td.name a").first.get_attribute("href")
        if first:
            shots.append((first, DESKTOP, f"{name}-package.png"))
        for href in page.locator("#packages tbody tr td.name a").evaluate_all(
            "els => els.map(e => e.getAttribute('href'))"
        ):
            page.goto((site / href).as_uri())  # the first row, in the table's order, with an issue to file
            if page.locator("#issues").count():
                shots.append((f"{href}#issues", DESKTOP, f"{name}-issue.png"))
                break
        for rel, size, file in shots:
            page.set_viewport_size(size)
            path, _, anchor = rel.partition("#")
            page.goto((site / path).as_uri() + (f"#{anchor}" if anchor else ""))
            tmp = site.parent / file
            page.screenshot(path=str(tmp), full_page=False)
            if tmp.stat().st_size < MIN_BYTES:
                raise SystemExit(f"{file}: only {tmp.stat().st_size} bytes: not replacing docs/{file}")
            shutil.copyfile(tmp, docs / file)
            written.append(docs / file)
        browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="a run's output dir")
    ap.add_argument("--name", default="screenshot-default-matrix", help="the files' name (no .png)")
    ap.add_argument("--docs", type=Path, default=ROOT / "docs", help="where to write them")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ft-shots-") as tmp:
        site = render(args.out.resolve(), Path(tmp))
        meta = json.loads((site.parent / "report.json").read_text(encoding="utf-8")).get("meta", {})
        for path in shoot(site, args.docs, args.name):
            print(f"wrote {path}")
    print(
        f"from the run of {meta.get('started', '?')} to {meta.get('finished', '?')} "
        f"({meta.get('jobs', '?')} jobs; interpreters {', '.join(meta.get('interpreters', []))}), "
        "rendered by this checkout"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
