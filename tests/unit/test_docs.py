"""The docs a newcomer reads (#37): README.md short, every relative link of README.md and docs/
resolving (to a file in the repository, and to a heading when it names an #anchor), the
matrix.yaml reference naming every key harness/config/matrix.py accepts with the code's defaults, and
the verdicts page naming every verdict and finding kind."""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from pathlib import Path

import pytest

from harness.config import matrix
from harness.core import model
from tests.conftest import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 150

_FENCE = re.compile(r"^(```|~~~)")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def _prose(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks and HTML comments."""
    out, fenced, comment = [], False, False
    for n, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if fenced:
            continue
        if comment or line.lstrip().startswith("<!--"):
            comment = "-->" not in line
            continue
        out.append((n, line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, line in _prose(path.read_text(encoding="utf-8")):
        m = _HEADING.match(line)
        if m:
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def links(path: Path) -> list[tuple[int, str]]:
    return [
        (n, m.group(1))
        for n, line in _prose(path.read_text(encoding="utf-8"))
        for m in _LINK.finditer(re.sub(r"`[^`]*`", "", line))
    ]  # not inside `code`


def broken(path: Path, root: Path = ROOT) -> list[str]:
    out = []
    for n, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...: not ours to check
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        where = f"{path.relative_to(root)}:{n}: {target}"
        if not dest.is_relative_to(root):
            out.append(f"{where} leaves the repository")
        elif not dest.exists():
            out.append(f"{where} does not exist")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            out.append(f"{where}: no heading with anchor #{anchor} in {dest.relative_to(root)}")
    return out


def test_the_readme_fits_on_a_screen_or_three() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines (at most {MAX_README_LINES})"


def test_docs_have_a_tutorial_how_to_pages_a_reference_and_explanations() -> None:
    assert (DOCS / "tutorial.md").is_file()
    for kind in ("howto", "reference", "explanation", "results"):
        assert len(list((DOCS / kind).glob("*.md"))) >= 2, kind


def test_every_relative_link_resolves() -> None:
    problems = [b for page in _pages() for b in broken(page)]
    assert not problems, "\n".join(problems)


def test_every_page_is_reachable_from_the_readme() -> None:
    seen, todo = set(), [README]
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen.add(page)
        for _, target in links(page):
            file = target.partition("#")[0]
            dest = (page.parent / file).resolve() if file else page
            if dest.suffix == ".md" and dest.is_file() and dest.is_relative_to(ROOT):
                todo.append(dest)
    missing = [str(p.relative_to(ROOT)) for p in DOCS.rglob("*.md") if p.resolve() not in seen]
    assert not missing, f"not linked from README.md or a page it links: {missing}"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Selecting packages: `{top: N}`", "selecting-packages-top-n"),
        ("Test setup inferred from the sdist", "test-setup-inferred-from-the-sdist"),
        ("Publish the table from a fork, click by click", "publish-the-table-from-a-fork-click-by-click"),
        ("ft-harness run", "ft-harness-run"),
        ("report.json, the site and its JSON API", "reportjson-the-site-and-its-json-api"),
    ],
)
def test_anchors_are_githubs(text: str, expected: str) -> None:
    assert slug(text) == expected


def test_the_link_check_finds_a_broken_link_and_anchor(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "tutorial.md").write_text("# Tutorial\n\n## A step: `one`\n")
    page = tmp_path / "docs" / "probe.md"
    page.write_text(
        "# Probe\n\n[a](nope.md) [b](tutorial.md#no-such) [c](#probe) "
        "[d](https://example.com/x) `[e](in-code.md)` [g](tutorial.md#a-step-one) "
        "[h](../../outside.md)\n\n```\n[f](fenced.md)\n```\n"
    )
    found = broken(page, root=tmp_path)
    assert [f.split(": ", 1)[1] for f in found] == [
        "nope.md does not exist",
        "tutorial.md#no-such: no heading with anchor #no-such in docs/tutorial.md",
        "../../outside.md leaves the repository",
    ], found


# ----------------------------------------------------------------------------- the references


def _table_keys(section: str) -> dict[str, str]:
    """key -> default column of the table under the heading ``section`` of reference/matrix.md."""
    text = (DOCS / "reference" / "matrix.md").read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [r.split("|") for r in body.splitlines() if r.startswith("| `")]
    return {r[1].strip().strip("`"): r[3].strip() for r in rows}


def test_the_matrix_reference_names_every_key_with_the_codes_defaults() -> None:
    settings = _table_keys("settings")
    assert set(settings) == {f.name for f in dataclasses.fields(matrix.Settings)}
    for f in dataclasses.fields(matrix.Settings):
        default = f.default
        shown = f"[{', '.join(map(str, default))}]" if isinstance(default, tuple) else str(default)
        assert settings[f.name] == f"`{shown}`", (f.name, settings[f.name], shown)
    assert set(_table_keys("packages[]: a package")) == set(matrix.PACKAGE_KEYS)
    assert set(_table_keys("packages[]: a selector")) == set(matrix.SELECTOR_KEYS)
    interp = {f.name for f in dataclasses.fields(matrix.Interpreter)} - {"origin"}
    assert set(_table_keys("interpreters[]")) == interp
    assert set(_table_keys("Top level")) == {"settings", "interpreters", "packages"}


def test_the_verdicts_page_names_every_verdict_and_finding_kind() -> None:
    text = (DOCS / "reference" / "verdicts.md").read_text(encoding="utf-8")
    for word in (*model.VERDICTS, *model.INFO_KINDS):
        assert f"| `{word}` |" in text, word


def test_the_documented_report_schema_is_the_codes() -> None:
    """#44: docs/reference/report-json.md said schema 4 when the code wrote 9. Every number it
    gives for report.json's schema, the JSON Schema's const and REPORT_SCHEMA agree."""
    import json

    from harness.results.report import REPORT_SCHEMA

    text = (DOCS / "reference" / "report-json.md").read_text(encoding="utf-8")
    said = [int(n) for n in re.findall(r"report schema \*\*(\d+)\*\*", text)]
    said += [int(n) for n in re.findall(r"report\.json's schema \((\d+)\)", text)]
    assert len(said) >= 2 and set(said) == {REPORT_SCHEMA}, said
    spec = json.loads((ROOT / "harness" / "schema" / "report.schema.json").read_text(encoding="utf-8"))
    assert spec["properties"]["schema"]["const"] == REPORT_SCHEMA
