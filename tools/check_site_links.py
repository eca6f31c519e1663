#!/usr/bin/env python3
"""Check that a site stands alone: every href/src of every page resolves to a file inside it.

    python tools/check_site_links.py out/site        # exit 1 and one line per broken link

Publishing only site/ (GitHub Pages) must publish everything its pages link.  Every ``.html``
under the site is parsed (html.parser); each ``href``/``src`` must be a relative URL naming a
regular file inside the site (no symlink out of it), and a ``#fragment`` on a page link must be
an ``id`` on that page.  Exempt: absolute http(s) URLs (links out, to PyPI or a project) and
same-page ``#anchors``.  Anything else (``/abs``, ``javascript:``, ``data:``, ``file:``, a path
that climbs out of the site, a missing file) is a broken link.
"""

from __future__ import annotations

import os
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str]] = []  # (attribute, value)
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for k, v in attrs:
            if k in ("href", "src") and v is not None:
                self.links.append((k, v))
            elif k in ("id", "name") and v:
                self.ids.add(v)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    page.close()
    return page


def check_site(site: Path) -> list[str]:
    """Every broken link under ``site``, as ``page: attr="value": why`` (empty: it stands alone)."""
    root = os.path.realpath(site)
    if not os.path.isdir(root):
        return [f"{site}: not a directory"]
    pages = sorted(Path(root).rglob("*.html"))
    parsed = {p: _parse(p) for p in pages}
    problems: list[str] = []
    for page, doc in parsed.items():
        rel_page = os.path.relpath(page, root)
        for attr, value in doc.links:
            why = _why(value, page, root, parsed, doc)
            if why:
                problems.append(f'{rel_page}: {attr}="{value}": {why}')
    return problems


def _why(value: str, page: Path, root: str, parsed: dict[Path, _Page], doc: _Page) -> str:
    url = value.strip()
    if not url:
        return "empty"
    try:
        parts = urlsplit(url)
    except ValueError:
        return "not a URL"
    if parts.scheme in ("http", "https") and parts.netloc:
        return ""  # a link out of the site, on purpose
    if parts.scheme or parts.netloc:
        return f"a {parts.scheme or 'network-path'} URL, not a file of the site"
    if not parts.path:  # "#anchor" (or "?x"): this page
        if parts.fragment and unquote(parts.fragment) not in doc.ids:
            return f"no id {parts.fragment!r} on this page"
        return ""
    if parts.path.startswith("/"):
        return "an absolute path: outside the site once published under a project URL"
    target = os.path.normpath(os.path.join(os.path.dirname(page), unquote(parts.path)))
    if os.path.commonpath([root, target]) != root:
        return "outside the site"
    real = os.path.realpath(target)
    if os.path.commonpath([root, real]) != root:
        return "a symlink out of the site"
    if not os.path.isfile(real):
        return "no such file in the site"
    if parts.fragment and target.endswith(".html"):
        other = parsed.get(Path(real))
        if other is not None and unquote(parts.fragment) not in other.ids:
            return f"no id {parts.fragment!r} on {os.path.relpath(real, root)}"
    return ""


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: check_site_links.py SITE_DIR", file=sys.stderr)
        return 2
    problems = check_site(Path(argv[0]))
    for p in problems:
        print(p)
    pages = len(list(Path(argv[0]).rglob("*.html")))
    print(f"{pages} pages, {len(problems)} broken link(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
