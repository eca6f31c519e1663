"""Structural rules for the GitHub workflows; each rule is also shown failing on a bad snippet."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.__main__ import build_parser

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
FILES = sorted(WORKFLOWS.glob("*.yml"))
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(\S+)(.*)$")
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(?:/[\w./-]+)?@[0-9a-f]{40}$")
VERSION_COMMENT = re.compile(r"^\s*#\s*v\d+\.\d+\.\d+\s*$")
HARNESS = re.compile(r'.*ft-harness\)?"?\s+([a-z].*)$')  # also `"$(command -v ft-harness)" image`
WRITE_OK = {"publish": {"pages", "id-token"}}  # the only job that may write anything


def _load(text: str) -> dict[str, Any]:
    data = yaml.safe_load(text)
    if True in data:  # YAML 1.1 reads the key `on` as a boolean
        data["on"] = data.pop(True)
    return data


# --------------------------------------------------------------------------- rule checkers


def unpinned(text: str) -> list[str]:
    """`uses:` lines not pinned to a full commit SHA with a `# vX.Y.Z` comment."""
    bad = []
    for n, line in enumerate(text.splitlines(), 1):
        m = USES.match(line)
        if (
            m
            and not m.group(1).startswith("./")
            and not (PINNED.match(m.group(1)) and VERSION_COMMENT.match(m.group(2)))
        ):
            bad.append(f"{n}: {line.strip()}")
    return bad


def _steps(data: dict[str, Any]):
    for name, job in (data.get("jobs") or {}).items():
        for step in job.get("steps") or []:
            yield name, step


def expressions_in_run(data: dict[str, Any]) -> list[str]:
    """`${{ }}` inside a run: script (inputs must come in through env:)."""
    return [f"{job}: {s['run'][:60]!r}" for job, s in _steps(data) if "${{" in str(s.get("run", ""))]


def credential_checkouts(data: dict[str, Any]) -> list[str]:
    return [
        job
        for job, s in _steps(data)
        if str(s.get("uses", "")).startswith("actions/checkout@")
        and (s.get("with") or {}).get("persist-credentials") is not False
    ]


def permission_problems(data: dict[str, Any]) -> list[str]:
    bad = []
    top = data.get("permissions", "missing")
    if top not in ({}, {"contents": "read"}):
        bad.append(f"top-level permissions {top!r}")
    for name, job in (data.get("jobs") or {}).items():
        perms = job.get("permissions", "missing")
        if not isinstance(perms, dict):
            bad.append(f"{name}: permissions {perms!r} (set them per job)")
            continue
        for scope, level in perms.items():
            if level != "read" and scope not in WRITE_OK.get(name, set()):
                bad.append(f"{name}: {scope}: {level}")
    return bad


def harness_invocations(data: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Every `ft-harness ...` command line in run: scripts, as argv with shell values filled in."""
    out = []
    for job, s in _steps(data):
        for line in str(s.get("run", "")).splitlines():
            m = HARNESS.search(line)
            quoted = line.lstrip().startswith("echo ") and "$(ft-harness " not in line
            if not m or quoted or line.lstrip().startswith("#"):
                continue
            cmd = m.group(1)
            cmd = re.split(r"\s(?:\||>|>>|&&|;)\s|\)\"", cmd)[0]
            argv = []
            for tok in shlex.split(cmd):
                if tok == "${args[@]}":
                    continue
                argv.append("4" if tok == "$SHARDS" else ("x" if "$" in tok else tok))
            out.append((job, argv))
    return out


def unknown_harness_args(data: dict[str, Any]) -> list[str]:
    """ft-harness invocations the real CLI parser refuses."""
    bad = []
    for job, argv in harness_invocations(data):
        try:
            build_parser().parse_args(argv)
        except SystemExit:
            bad.append(f"{job}: ft-harness {' '.join(argv)}")
    return bad


# --------------------------------------------------------------------------- the real workflows


def test_both_workflows_exist():
    assert {p.name for p in FILES} >= {"matrix.yml", "ci.yml"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_general_rules(path, capsys):
    text = path.read_text()
    data = _load(text)
    assert unpinned(text) == []
    assert expressions_in_run(data) == []
    assert credential_checkouts(data) == []
    assert permission_problems(data) == []
    assert "concurrency" in data
    assert unknown_harness_args(data) == []
    capsys.readouterr()  # argparse's usage text on a failure is not a test result


def _gha(expr: str, **github: str) -> bool:
    """A GitHub Actions `if:` of ==, &&, || and parentheses over github.* values, evaluated."""
    import re as _re

    ctx = {
        "event_name": github["event_name"],
        "ref_name": github["ref_name"],
        "event.repository.default_branch": github["default_branch"],
    }
    py = expr.replace("&&", " and ").replace("||", " or ")
    py = _re.sub(r"github\.([\w.]+)", lambda m: repr(ctx[m.group(1)]), py)
    return bool(eval(py, {"__builtins__": {}}))  # noqa: S307 - our own workflow's expression


def test_matrix_workflow_shape():
    data = _load((WORKFLOWS / "matrix.yml").read_text())
    on, jobs = data["on"], data["jobs"]
    assert {"schedule", "workflow_dispatch", "pull_request"} <= set(on)
    assert set(on["workflow_dispatch"]["inputs"]) == {"matrix", "shards"}
    assert {"harness/**", "matrix.yaml", "containers/**"} <= set(on["pull_request"]["paths"])
    needs = {k: set([v["needs"]] if isinstance(v.get("needs"), str) else v.get("needs", [])) for k, v in jobs.items()}
    assert needs == {
        "plan": set(),
        "image": set(),
        "store": {"plan", "image"},
        "run": {"plan", "image", "store"},
        "report": {"plan", "run"},
        "publish": {"report"},
    }
    run = jobs["run"]
    assert run["strategy"]["fail-fast"] is False
    assert run["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    uploads = [s for s in run["steps"] if "upload-artifact@" in str(s.get("uses", ""))]
    assert uploads and uploads[0]["if"] == "always()"
    shard_step = next(s for s in run["steps"] if "--shard" in str(s.get("run", "")))
    assert shard_step["env"]["SHARD"] == "${{ matrix.shard }}"
    # the publish condition holds on the schedule even when default_branch comes back empty
    # (issue #16), never on a pull request, and on a manual run only from the default branch
    cond = jobs["publish"]["if"]
    assert _gha(cond, event_name="schedule", ref_name="main", default_branch="")
    assert _gha(cond, event_name="schedule", ref_name="main", default_branch="main")
    assert not _gha(cond, event_name="pull_request", ref_name="main", default_branch="main")
    assert _gha(cond, event_name="workflow_dispatch", ref_name="main", default_branch="main")
    assert not _gha(cond, event_name="workflow_dispatch", ref_name="topic", default_branch="main")
    merge = next(s for s in jobs["report"]["steps"] if "ft-harness report" in str(s.get("run", "")))
    assert '--matrix "$MATRIX"' in merge["run"] and "--site-url" in merge["run"]  # missing jobs listed
    assert "GITHUB_STEP_SUMMARY" not in "".join(
        str(s.get("run", "")) for j in jobs.values() for s in j.get("steps", [])
    )  # one summary: the harness's
    assert "--resolved plan/resolved.json" in str(jobs["plan"]["steps"]) + str(run["steps"])
    assert any("deploy-pages@" in str(s.get("uses")) for s in jobs["publish"]["steps"])
    # the previous report and the history come from the published site, after the cache
    # (which evicts what is unused for 7 days): the site's copy wins when it answers
    for job in ("plan", "report"):
        names = [s.get("name", "") for s in jobs[job]["steps"]]
        site = names.index("The last published report, from the site itself")
        cache = next(i for i, n in enumerate(names) if n.startswith("Restore the last published report"))
        assert cache < site, job
        body = jobs[job]["steps"][site]["run"]
        assert '"${SITE_URL}${f}"' in body and "report.json history.json" in body
    assert any("upload-pages-artifact@" in str(s.get("uses")) for s in jobs["report"]["steps"])
    # what is published is checked to stand alone first (#16): no link out of merged/site/
    steps = jobs["report"]["steps"]
    pages = next(i for i, s in enumerate(steps) if "upload-pages-artifact@" in str(s.get("uses")))
    assert steps[pages]["with"]["path"] == "merged/site/"
    assert steps[pages - 1]["run"] == "python tools/check_site_links.py merged/site"
    commands = {argv[0] for _, argv in harness_invocations(data)}
    assert commands == {"plan", "image", "run", "report", "diff"}
    plan_argv = [a for j, a in harness_invocations(data) if j == "plan"]
    assert ["plan", "--matrix", "x", "--shards", "4", "--format", "github"] in plan_argv


def test_no_package_code_outside_a_container():
    """Every `ft-harness run` of a workflow is on --backend docker (issue #32: the side job on
    the local backend is gone); the report merges the shards against the plan (--matrix), so a
    result file no planned job wrote is listed, not published."""
    for path in FILES:
        data = _load(path.read_text())
        runs = [argv for _, argv in harness_invocations(data) if argv[0] == "run"]
        for argv in runs:
            assert "--backend" in argv and argv[argv.index("--backend") + 1] == "docker", (path.name, argv)
    jobs = _load((WORKFLOWS / "matrix.yml").read_text())["jobs"]
    merge = next(s for s in jobs["report"]["steps"] if "ft-harness report" in str(s.get("run", "")))
    assert '--matrix "$MATRIX"' in merge["run"] and "--resolved plan/resolved.json" in merge["run"]


def test_the_schedule_runs_the_published_matrix_with_315t_mounted():
    """The schedule's matrix is examples/published.yaml; its installed 3.15t comes from
    setup-python on each shard's runner, first on PATH where `python:python3.15t` is looked up."""
    from harness.config import matrix

    data = _load((WORKFLOWS / "matrix.yml").read_text())
    assert "'examples/published.yaml'" in data["env"]["MATRIX"]
    assert data["on"]["workflow_dispatch"]["inputs"]["matrix"]["default"] == "examples/published.yaml"
    spec = matrix.load(ROOT / "examples" / "published.yaml")
    installed = [i.source.name for i in spec.interpreters if not i.source.builds]
    assert installed == ["python3.15t"]
    steps = data["jobs"]["run"]["steps"]
    ft = next(s for s in steps if s.get("id") == "ft315")
    assert "setup-python@" in ft["uses"] and ft["with"]["python-version"] == "3.15t"
    run = next(s for s in steps if "ft-harness run" in str(s.get("run", "")))
    assert run["env"]["FT_PYTHON"] == "${{ steps.ft315.outputs.python-path }}"
    assert 'PATH="$(dirname "$FT_PYTHON"):$PATH"' in run["run"]


def test_ci_workflow_runs_ci_script():
    data = _load((WORKFLOWS / "ci.yml").read_text())
    assert {"push", "pull_request"} <= set(data["on"])
    runs = [s.get("run") for _, s in _steps(data) if s.get("run")]
    assert runs == ["bash .ci/run"]


# --------------------------------------------------------------------------- the rules can fail

BAD = """\
name: bad
on: pull_request
permissions: write-all
jobs:
  build:
    runs-on: ubuntu-latest
    permissions:
      contents: write
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065
      - run: echo "${{ github.event.pull_request.title }}"
      - run: ft-harness plan --shards "$SHARDS" --formt github
"""


def test_rules_catch_a_bad_workflow(capsys):
    data = _load(BAD)
    assert [b.split(":")[0] for b in unpinned(BAD)] == ["10", "11"]  # tag; SHA without comment
    assert len(expressions_in_run(data)) == 1
    assert credential_checkouts(data) == ["build"]
    assert permission_problems(data) == ["top-level permissions 'write-all'", "build: contents: write"]
    assert unknown_harness_args(data) == ["build: ft-harness plan --shards 4 --formt github"]
    capsys.readouterr()


def test_the_wheel_store_is_built_once_saved_by_the_default_branch_and_restored_by_every_shard():
    """#43: one store job builds the union of the jobs' plans (tools/wheel-store build, the same
    command that runs here) and saves the store under its content key, only from the default
    branch; each shard restores that key and never saves; the report gets the step's record."""
    jobs = _load((WORKFLOWS / "matrix.yml").read_text())["jobs"]
    store = jobs["store"]
    build = next(s for s in store["steps"] if s.get("id") == "build")
    assert 'python tools/wheel-store build --matrix "$MATRIX" --resolved plan/resolved.json' in build["run"]
    assert store["outputs"]["key"] == "${{ steps.build.outputs.key }}"
    saves = [
        s
        for j in jobs.values()
        for s in j.get("steps", [])
        if "cache/save@" in str(s.get("uses")) and "wheels" in str(s.get("with", {}).get("path"))
    ]
    assert saves == [next(s for s in store["steps"] if "cache/save@" in str(s.get("uses")))]
    (save,) = saves
    assert save["with"]["key"] == "${{ steps.build.outputs.key }}"
    cond = save["if"]
    assert _gha(cond, event_name="schedule", ref_name="main", default_branch="")
    assert _gha(cond, event_name="workflow_dispatch", ref_name="main", default_branch="main")
    assert not _gha(cond, event_name="workflow_dispatch", ref_name="topic", default_branch="main")
    assert not _gha(cond, event_name="pull_request", ref_name="main", default_branch="main")
    restore = [
        s
        for s in jobs["run"]["steps"]
        if "cache/restore@" in str(s.get("uses")) and "wheels" in str(s.get("with", {}).get("path"))
    ]
    assert len(restore) == 1 and restore[0]["with"]["key"] == "${{ needs.store.outputs.key }}"
    names = [s.get("name", "") for s in jobs["run"]["steps"]]
    assert names.index(restore[0]["name"]) < next(i for i, n in enumerate(names) if n == "Run the shard")
    record = next(s for s in jobs["report"]["steps"] if s.get("with", {}).get("name") == "store")
    assert record["with"]["path"] == "merged"  # merged/store.json: report.json meta.store.before_jobs
    # #46: the docker backend's store alone (wheels/docker), built, saved and restored as such;
    # a local run's (wheels/local) and the layout before it never travel in the cache
    assert build["run"].rstrip().endswith("--backend docker")
    assert "--backend docker" in next(s for s in jobs["run"]["steps"] if s.get("name") == "Run the shard")["run"]
    cached = [
        s["with"]
        for j in jobs.values()
        for s in j.get("steps", [])
        if "actions/cache/" in str(s.get("uses")) and "wheels" in str(s.get("with", {}).get("path"))
    ]
    assert len(cached) == 3 and all(c["path"] == "${{ env.FT_HARNESS_CACHE }}/wheels/docker" for c in cached)
    assert all(c.get("restore-keys", "ft-wheels-docker-") == "ft-wheels-docker-" for c in cached)
