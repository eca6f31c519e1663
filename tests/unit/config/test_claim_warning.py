"""`plan` and `run` say when a matrix's settings cannot hold an "only without the GIL" claim
(issue #58): ``confirm: 2``, as examples/published.yaml had, can reach p = 0.17 at best (2/2
against 0/2), so no ``ft-race`` or ``ft-crash`` could ever be published. Real CLI calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import matrix
from harness.config.plan import best_p, claim_warning
from harness.core.jobspec import Settings
from harness.util.stats import ALPHA, fisher_greater, holm
from tests.conftest import cli, fixture_matrix

ROOT = Path(__file__).resolve().parents[3]
LINE = (
    "settings.confirm: 2 can reach p = 0.17 at best (2/2 runs alone failing with the GIL off, 0/2 with it on), "
    "above α = 0.05: no ft-race or ft-crash can hold; an ft-race or ft-crash needs confirm ≥ 5 (p = 0.004, "
    "which holds among up to 12 candidates)"
)


def _matrix(tmp_path: Path, settings: str) -> Path:
    m = tmp_path / "m.yaml"
    m.write_text(
        f"settings: {settings}\n"
        'interpreters: [{name: cpython3.13t, version: "3.13.5", source: "debian:trixie"}]\n'
        "packages:\n  - {name: six, version: '==1.17.0'}\n"
    )
    return m


def test_plan_warns_once_on_stderr_and_still_plans(tmp_path: Path) -> None:
    r = cli("plan", "--matrix", str(_matrix(tmp_path, "{confirm: 2, confirm_budget: 300}")), "--format", "table")
    assert r.returncode == 0, r.stderr
    assert "cpython3.13t--six" in r.stdout and "warning" not in r.stdout
    assert [ln for ln in r.stderr.splitlines() if "settings.confirm" in ln] == [f"warning: {LINE}"]


@pytest.mark.parametrize("settings", ["{confirm: 3}", "{confirm: 20}", "{confirm: 2, gil_modes: [0]}"])
def test_plan_says_nothing_when_a_claim_can_hold_or_none_is_asked(tmp_path: Path, settings: str) -> None:
    r = cli("plan", "--matrix", str(_matrix(tmp_path, settings)))
    assert r.returncode == 0 and "settings.confirm" not in r.stderr, r.stderr


def test_run_says_it_at_its_start(tmp_path: Path) -> None:
    # before any job: here the run stops at once (--package names no package of the matrix)
    m = fixture_matrix(tmp_path, ["ft_clean"], "settings: {confirm: 2}")
    r = cli("run", "--matrix", str(m), "--out", str(tmp_path / "out"), "--backend", "local", "--package", "nope")
    assert r.returncode == 2 and "'nope' is not in" in r.stderr, r.stderr
    assert r.stderr.splitlines()[0] == f"ft-harness: warning: {LINE}"


def test_the_numbers_are_the_fisher_p_and_holms_levels() -> None:
    assert best_p(2) == fisher_greater(2, 2, 0, 2) == pytest.approx(1 / 6)
    assert best_p(3) == pytest.approx(ALPHA)  # holds alone, at exactly α: no warning
    assert best_p(4) > ALPHA / 10 >= best_p(5) == pytest.approx(1 / 252)
    assert holm([best_p(5)] + [1.0] * 11) == [True] + [False] * 11  # the best of 12 holds
    assert holm([best_p(5)] + [1.0] * 12)[0] is False  # not of 13
    assert claim_warning(Settings(confirm=0)).startswith("settings.confirm: 0 turns the runs alone off: ")


def test_the_published_matrix_can_hold_a_claim() -> None:
    spec = matrix.load(ROOT / "examples" / "published.yaml")
    assert spec.settings.confirm >= 5 and claim_warning(spec.settings) == ""
    # its budget is kept from the start of each job's (verdict.confirm.reserve)
    assert spec.settings.confirm_budget <= spec.settings.job_timeout / 3
