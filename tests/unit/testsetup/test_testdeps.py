"""Inferred test deps that are direct URL references are not installed (#30)."""

from __future__ import annotations

from harness.testsetup.testdeps import url_references


def test_url_references_are_set_apart_in_order() -> None:
    reqs = [
        "pytest-mock>=3",
        "evil @ https://example.org/evil-1.0.tar.gz",
        "hypothesis",
        "tool @ git+https://github.com/x/tool@main",
        "local @ file:///etc/passwd",
        "git+https://github.com/x/bare.git",
        "attrs[tests]; python_version >= '3.9'",
    ]
    named, urls = url_references(reqs)
    assert named == ("pytest-mock>=3", "hypothesis", "attrs[tests]; python_version >= '3.9'")
    assert urls == (
        "evil @ https://example.org/evil-1.0.tar.gz",
        "tool @ git+https://github.com/x/tool@main",
        "local @ file:///etc/passwd",
        "git+https://github.com/x/bare.git",
    )
    assert url_references([]) == ((), ())


def test_the_job_installs_none_and_its_test_setup_says_so(tmp_path) -> None:
    from pathlib import Path

    from harness.config import matrix, plan
    from harness.core.model import InterpreterInfo
    from harness.testsetup.suitesetup import read_suite
    from tests.conftest import INTERP_YAML

    src = tmp_path / "demo-1.0"
    (src / "tests").mkdir(parents=True)
    (src / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    (src / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "1.0"\n[project.optional-dependencies]\n'
        'test = ["pytest-mock", "evil @ https://example.org/evil-1.0.tar.gz"]\n'
    )
    job = plan.make_plan(matrix.loads(INTERP_YAML + "packages: [{name: demo}]\n"))[0]
    suite = read_suite(Path(src), job.package, job.settings, InterpreterInfo(name="t", version="3.13.5", key="k"))
    test_setup, deps = suite.at_source.record, suite.test_deps
    assert "pytest-mock" in deps and not any("evil" in d for d in deps)
    assert not any("evil" in d for d in test_setup.requires)  # the recipe's installs too
    assert (
        "not installed: evil @ https://example.org/evil-1.0.tar.gz (a direct URL reference; list it "
        "in the package's test_requires in matrix.yaml to install it)"
    ) in test_setup.sources
