"""The test tiers (tests/conftest.py): a plain `pytest` runs the unit tier, `nox -s tests` all of them."""

from __future__ import annotations

import ast
import re

from tests.conftest import ROOT, TIERS

UNIT = ROOT / "tests" / "unit"
# markers of a tier a plain `pytest` leaves out, or of what the unit tier must not need
NOT_UNIT = re.compile(r"pytest\.mark\.(integration|docker|browser|reliability|network|tsan|slow)\b")


def test_no_unit_test_carries_a_marker_of_another_tier() -> None:
    # such a test would leave the unit tier quietly; it belongs under tests/integration/
    found = [
        f"{p.relative_to(ROOT)}:{n}: {m.group(0)}"
        for p in sorted(UNIT.glob("*.py"))
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if (m := NOT_UNIT.search(line)) and p.name != "test_tiers.py"
    ]
    assert found == []


def test_nox_runs_every_tier() -> None:
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    tiers = next(
        ast.literal_eval(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ALL_TIERS" for t in n.targets)
    )
    assert tiers == tuple(f"--{t}" for t in TIERS)
    tests_session = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "tests")
    assert "*ALL_TIERS" in ast.unparse(tests_session)


def test_every_tier_marker_is_registered() -> None:
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    registered = {m.split(":", 1)[0] for m in cfg["markers"]}
    assert set(TIERS) <= registered
    assert "--strict-markers" in cfg["addopts"]


def test_the_tier_options_are_documented() -> None:
    text = (ROOT / "docs" / "development.md").read_text()
    for t in TIERS:
        assert f"--{t}" in text, t


def test_the_reliability_tier_writes_its_table_outside_the_checkout(tmp_path) -> None:
    # only `nox -s reliability-doc` (--reliability-table docs/reliability.md) rewrites the page
    from tests.reliability import conftest as rel

    class Config:
        def __init__(self, asked: str) -> None:
            self.asked = asked

        def getoption(self, name: str) -> str:
            assert name == "reliability_table"
            return self.asked

    rel._WHERE.setdefault("tmp", tmp_path)
    assert not rel.table_path(Config("")).is_relative_to(ROOT)
    assert rel.table_path(Config(str(rel.TABLE))) == rel.TABLE
    args = re.sub(r'",\s*"', " ", (ROOT / "noxfile.py").read_text())  # the session's args, however wrapped
    assert "--reliability-table docs/reliability.md" in args


def test_the_test_only_dependencies_are_not_imported_by_harness() -> None:
    # jsonschema and junitparser are in the test extra, not in the dependencies: harness/ must
    # run without them
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = " ".join(project["dependencies"])
    imported = set()
    for path in (ROOT / "harness").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.split(".")[0])
    for name in ("jsonschema", "junitparser"):
        assert name not in runtime and name not in imported, name
        assert any(d.startswith(name) for d in project["optional-dependencies"]["test"]), name
