"""A pytest plugin ft-harness loads into a GIL-on run of ``settings.gil_on: targeted`` (issue #34;
``harness.verdict.gilon`` picks the tests): ``-p ft_harness_only --ft-harness-only=FILE``.

Of the items pytest collected, it keeps those FILE lists (one node id a line) and deselects the
rest, as ``--deselect`` would. Unlike node ids on the command line (or in an ``@file``), an id
that matches nothing is no usage error that stops the run: the harness reads some ids back from
JUnit's classname, which can name a directory, module or class ambiguously, so an item also
matches by the (classname, name) pair JUnit writes for it; and an id with no ``::`` (a module that
errored at collection) keeps every item of that file.
"""

from __future__ import annotations

import pytest

OPTION = "--ft-harness-only"


def pytest_addoption(parser) -> None:
    parser.addoption(OPTION, default="", help="ft-harness: run only the node ids listed in this file")


def junit_key(nodeid: str) -> tuple[str, str]:
    """The (classname, name) pytest's junitxml writes for a node id (harness.parse.junit)."""
    names = nodeid.split("::")
    names[0] = names[0].replace("/", ".")
    if names[0].endswith(".py"):
        names[0] = names[0][: -len(".py")]
    if len(names) == 1:
        return ("", names[0])
    return (".".join(names[:-1]), names[-1])


def _listed(config) -> set[str] | None:
    path = config.getoption("ft_harness_only")
    if not path:
        return None
    with open(path, encoding="utf-8") as f:
        return {line.rstrip("\n") for line in f if line.strip()}


def pytest_report_header(config) -> str | None:
    listed = _listed(config)
    return None if listed is None else f"ft-harness: only the {len(listed)} test id(s) listed (gil_on: targeted)"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items) -> None:
    listed = _listed(config)
    if listed is None:
        return
    keys = {junit_key(t) for t in listed if "::" in t}
    files = {t for t in listed if "::" not in t}
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        nodeid = item.nodeid
        hit = nodeid in listed or junit_key(nodeid) in keys or nodeid.split("::", 1)[0] in files
        (keep if hit else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
