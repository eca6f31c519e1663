"""tools/run_workflow.py: a workflow file run as written, its actions emulated on local folders
(#46).  A small workflow of the same shape as matrix.yml (a plan job's output as a fromJSON
matrix, shards uploading artifacts with two paths, a report job downloading them by pattern and
saving a cache the next run restores), run twice through the real tool; plus the expression
reader on the expressions matrix.yml itself uses.  The real workflow through the tool, with
docker and the hostile fixture: tests/integration/test_workflow_local.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools"))
import run_workflow as rw  # noqa: E402

WORKFLOW = r"""
name: t
on:
  workflow_dispatch:
    inputs:
      n: {type: string, default: "2"}
permissions: {}
env:
  WHO: ${{ inputs.n || 'none' }}
jobs:
  plan:
    runs-on: x
    permissions: {contents: read}
    outputs:
      shards: ${{ steps.p.outputs.shards }}
    steps:
      - uses: actions/checkout@v4
      - id: p
        run: echo 'shards={"include":[{"i":1},{"i":2}]}' >> "$GITHUB_OUTPUT"
  run:
    needs: [plan]
    strategy:
      matrix: ${{ fromJSON(needs.plan.outputs.shards) }}
    steps:
      - uses: actions/cache/restore@v4
        with: {path: prev, key: "c-${{ github.run_id }}", restore-keys: "c-"}
      - env: {I: "${{ matrix.i }}"}
        run: |
          mkdir -p out/results out/work/j/logs/results
          echo "$I $WHO" > out/results/r$I.json
          echo planted > out/work/j/logs/results/r$I.json
          if [ -d prev ]; then cat prev/stamp > out/results/prev$I.json; fi
      - uses: actions/upload-artifact@v4
        with:
          name: shard-${{ matrix.i }}
          path: |
            out/results/
            out/work/*/logs/
  report:
    needs: [plan, run]
    if: ${{ !cancelled() && needs.plan.result == 'success' }}
    steps:
      - uses: actions/download-artifact@v4
        with: {pattern: shard-*, path: shards}
      - run: find shards -type f | sort > list.txt; mkdir -p prev; echo "$GITHUB_RUN_ID" > prev/stamp
      - name: never
        if: github.event_name == 'schedule'
        run: exit 1
      - uses: actions/cache/save@v4
        with: {path: prev, key: "c-${{ github.run_id }}"}
      - name: allowed to fail
        continue-on-error: ${{ github.event_name != 'pull_request' }}
        run: exit 3
"""


def test_a_workflow_runs_as_written_twice_the_second_restoring_the_firsts_cache(tmp_path):
    wf = tmp_path / "wf.yml"
    wf.write_text(WORKFLOW)
    state = tmp_path / "state"
    assert rw.main(["--workflow", str(wf), "--state", str(state), "--run-id", "1"]) == 0
    run1 = state / "runs" / "1"
    listed = (run1 / "report" / "workspace" / "list.txt").read_text().split()
    assert listed == [
        "shards/shard-1/results/r1.json",
        "shards/shard-1/work/j/logs/results/r1.json",
        "shards/shard-2/results/r2.json",
        "shards/shard-2/work/j/logs/results/r2.json",
    ]
    assert (state / "artifacts" / "1" / "shard-2" / "results" / "r2.json").read_text() == "2 2\n"
    summary = json.loads((run1 / "summary.json").read_text())
    assert {j: v["result"] for j, v in summary["jobs"].items()} == {
        "plan": "success",
        "run": "success",
        "report": "success",
    }
    outcomes = {(s["job"], s.get("name")): s.get("outcome") for s in summary["steps"]}
    assert outcomes[("report", "never")] == "skipped (if)"
    assert outcomes[("report", "allowed to fail")] == "failure (continue-on-error)"
    assert {"job": "plan", "github_only_skipped": ["permissions"]} in summary["steps"]

    assert rw.main(["--workflow", str(wf), "--state", str(state), "--run-id", "2"]) == 0
    assert (state / "runs" / "2" / "run-1" / "workspace" / "out" / "results" / "prev1.json").read_text() == "1\n"


def test_a_failing_step_fails_its_job_and_a_bad_input_is_exit_2(tmp_path, capsys):
    wf = tmp_path / "wf.yml"
    wf.write_text(WORKFLOW.replace('echo "$I $WHO" > out/results/r$I.json', "exit 7"))
    assert rw.main(["--workflow", str(wf), "--state", str(tmp_path / "s"), "--run-id", "1"]) == 1
    summary = json.loads((tmp_path / "s" / "runs" / "1" / "summary.json").read_text())
    assert summary["jobs"]["run"]["result"] == "failure"
    # !cancelled(): the report job runs anyway (and fails here: `find shards` finds no shards)
    assert summary["jobs"]["report"]["result"] == "failure"
    assert any(s.get("job") == "report" and "exit 1" in s.get("error", "") for s in summary["steps"])
    assert rw.main(["--workflow", str(wf), "--state", str(tmp_path / "s"), "--input", "nope=1"]) == 2
    assert "--input nope: the workflow declares ['n']" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("inputs.matrix || (github.event_name == 'schedule' && 'examples/published.yaml') || 'matrix.yaml'", "m.yaml"),
        ("inputs.shards || (github.event_name == 'schedule' && 'auto') || 4", "auto"),
        ("!cancelled() && needs.plan.result == 'success'", True),
        (
            "github.event_name == 'schedule' || (github.event_name == 'workflow_dispatch' && "
            "github.ref_name == github.event.repository.default_branch)",
            True,
        ),
        ("steps.cache.outputs.cache-hit != 'true'", True),
        ('fromJSON(\'{"include": [{"shard": "1/2"}]}\')', {"include": [{"shard": "1/2"}]}),
        ("github.event_name != 'PULL_REQUEST'", False),  # GitHub compares strings ignoring case
    ],
)
def test_the_expressions_matrix_yml_uses(expr, want):
    ctx = {
        "inputs": {"matrix": "m.yaml", "shards": ""},
        "github": {
            "event_name": "pull_request" if "PULL" in expr else "schedule",
            "ref_name": "main",
            "event": {"repository": {"default_branch": "main"}},
        },
        "needs": {"plan": {"result": "success"}},
        "steps": {"cache": {"outputs": {}}},
    }
    funcs = {"cancelled": lambda: False, "fromJSON": json.loads}
    if "inputs.shards" in expr:
        ctx["inputs"]["shards"] = ""
    assert rw.Expr(expr, ctx, funcs).value() == want


def test_every_action_matrix_yml_uses_is_emulated_or_github_only():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "matrix.yml").read_text())
    used = {s["uses"].split("@")[0] for j in wf["jobs"].values() for s in j["steps"] if "uses" in s}
    emulated = {
        "actions/checkout",
        "actions/setup-python",
        "actions/upload-artifact",
        "actions/download-artifact",
        "actions/cache/restore",
        "actions/cache/save",
        "actions/upload-pages-artifact",
        "actions/deploy-pages",
    }
    assert used <= emulated, used - emulated


def test_a_cache_saved_under_one_path_is_not_restored_under_another(tmp_path):
    """actions/cache versions an entry by its paths: matrix.yml saved its results cache as
    next-results and restored previous-results, so --reuse never had anything (found by running
    the workflow through this tool)."""
    wf = tmp_path / "wf.yml"
    wf.write_text(
        WORKFLOW.replace(
            'with: {path: prev, key: "c-${{ github.run_id }}"}',
            'with: {path: elsewhere, key: "c-${{ github.run_id }}"}',
        ).replace("mkdir -p prev; echo", 'mkdir -p prev elsewhere; echo "$GITHUB_RUN_ID" > elsewhere/stamp; echo')
    )
    state = tmp_path / "state"
    assert rw.main(["--workflow", str(wf), "--state", str(state), "--run-id", "1"]) == 0
    assert rw.main(["--workflow", str(wf), "--state", str(state), "--run-id", "2"]) == 0
    assert not (state / "runs" / "2" / "run-1" / "workspace" / "out" / "results" / "prev1.json").exists()
    summary = json.loads((state / "runs" / "2" / "summary.json").read_text())
    assert any(s.get("emulated") == "c-2: no entry" for s in summary["steps"])


def test_matrix_yml_saves_its_results_cache_under_the_path_it_restores():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "matrix.yml").read_text())
    paths = {
        s["uses"].split("@")[0]: s["with"]["path"]
        for j in wf["jobs"].values()
        for s in j["steps"]
        if "uses" in s and "ft-results-" in str(s.get("with", {}).get("key", ""))
    }
    assert paths == {"actions/cache/restore": "previous-results", "actions/cache/save": "previous-results"}


def test_matrix_yml_saves_its_report_cache_under_the_path_it_restores():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "matrix.yml").read_text())
    paths = {
        (s["uses"].split("@")[0], s["with"]["path"])
        for j in wf["jobs"].values()
        for s in j["steps"]
        if "uses" in s and "ft-report-" in str(s.get("with", {}).get("key", ""))
    }
    assert paths == {("actions/cache/restore", "previous"), ("actions/cache/save", "previous")}
    steps = [s.get("name", "") for s in wf["jobs"]["report"]["steps"]]
    assert steps.index("Keep this report for the next run") > steps.index("Diff against the last published report")
