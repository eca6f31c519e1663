"""A pytest plugin ft-harness loads into a GIL-on run of ``settings.gil_on: targeted`` (issue #34;
``harness.verdict.gilon`` picks the tests): ``-p ft_harness_only --ft-harness-only=FILE``.

Of the items pytest collected, it keeps those FILE lists (one node id a line) and deselects the
rest, as ``--deselect`` would. Unlike node ids on the command line (or in an ``@file``), an id
that matches nothing is no usage error that stops the run: the harness reads some ids back from
JUnit's classname, which can name a directory, module or class ambiguously, so an item also
matches by the (classname, name) pair JUnit writes for it; and an id with no ``::`` (a module that
errored at collection) keeps every item of that file.

``--ft-harness-plan=FILE`` (issue #58; harness.job.budgetplan): a threaded run planned to the
job's budget. FILE has ``<iterations>\t<threads>\t<node id>`` a line; each test listed gets
pytest-run-parallel's ``iterations`` marker with that many (never more than its own marker
asks) and, threads not 0, its ``parallel_threads_limit`` marker; with
``--ft-harness-plan-only`` the run keeps only the tests listed (a sample).
"""

from __future__ import annotations

import pytest

OPTION = "--ft-harness-only"


def pytest_addoption(parser) -> None:
    parser.addoption(OPTION, default="", help="ft-harness: run only the node ids listed in this file")
    parser.addoption("--ft-harness-plan", default="", help="ft-harness: iterations per node id, from this file")
    parser.addoption("--ft-harness-plan-only", action="store_true", help="ft-harness: only the plan's node ids")


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


def _planned(config) -> dict[str, tuple[int, int]] | None:
    path = config.getoption("ft_harness_plan")
    if not path:
        return None
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            its, threads, nodeid = (line.rstrip("\n").split("\t", 2) + ["", ""])[:3]
            if its.isdigit() and threads.isdigit() and nodeid:
                out[nodeid] = (int(its), int(threads))
    return out


def pytest_report_header(config) -> str | None:
    lines = []
    listed = _listed(config)
    if listed is not None:
        lines.append(f"ft-harness: only the {len(listed)} test id(s) listed (gil_on: targeted)")
    planned = _planned(config)
    if planned is not None:
        what = "only these tests, " if config.getoption("ft_harness_plan_only") else ""
        lines.append(f"ft-harness: planned to the job's budget: {what}{len(planned)} test(s) with fewer iterations")
    return "\n".join(lines) or None


def _match(item, ids: set[str], keys: set[tuple[str, str]], files: set[str]) -> bool:
    nodeid = item.nodeid
    return nodeid in ids or junit_key(nodeid) in keys or nodeid.split("::", 1)[0] in files


def _apply_plan(config, items) -> None:
    planned = _planned(config)
    if planned is None:
        return
    by_key = {junit_key(t): n for t, n in planned.items()}
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        got = planned.get(item.nodeid, by_key.get(junit_key(item.nodeid)))
        if got is None:
            (drop if config.getoption("ft_harness_plan_only") else keep).append(item)
            continue
        n, threads = got
        own = item.get_closest_marker("iterations")
        if own is None or (own.args and isinstance(own.args[0], int) and own.args[0] > n):
            item.add_marker(pytest.mark.iterations(n))
        if threads > 1:  # a limit: never more than the run's or the test's own
            item.add_marker(pytest.mark.parallel_threads_limit(threads))
        keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items) -> None:
    _apply_plan(config, items)
    listed = _listed(config)
    if listed is None:
        return
    keys = {junit_key(t) for t in listed if "::" in t}
    files = {t for t in listed if "::" not in t}
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        (keep if _match(item, listed, keys, files) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
