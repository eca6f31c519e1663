"""benchmarks/cost.py's pure parts: what a result decided, and whether two runs decided the same."""

from __future__ import annotations

from benchmarks import cost, report


def _res(verdict: str, *findings: tuple[str, str], ran: str = "") -> dict:
    return {
        "verdict": verdict,
        "findings": [{"kind": k, "test_id": t, "modes": [0]} for k, t in findings],
        "gil_on": {"ran": ran} if ran else None,
    }


def test_the_same_verdicts_and_findings_in_another_order_are_the_same() -> None:
    new = {
        "j--a": _res("ft-race", ("ft-race", "t.py::a"), ("no-thread-coverage", "")),
        "j--b": _res("compatible", ran="none"),
    }
    old = {
        "j--a": _res("ft-race", ("no-thread-coverage", ""), ("ft-race", "t.py::a")),
        "j--b": _res("compatible", ran="suite"),
    }
    assert cost.compare(new, old) == []
    assert cost.gil_on_runs(new) == {"j--a": "", "j--b": "none"}


def test_another_verdict_another_finding_or_a_missing_job_is_a_difference() -> None:
    old = {"j--a": _res("ft-race", ("ft-race", "t.py::a")), "j--b": _res("compatible")}
    assert cost.compare(
        {"j--a": _res("thread-unsafe", ("thread-unsafe", "t.py::a")), "j--b": _res("compatible")}, old
    ) == ["j--a: verdict thread-unsafe (new) vs ft-race (old)"]
    assert cost.compare({"j--a": _res("ft-race", ("ft-race", "t.py::b")), "j--b": _res("compatible")}, old) == [
        "j--a: findings [('ft-race', 't.py::b')] (new) vs [('ft-race', 't.py::a')] (old)"
    ]
    assert cost.compare({"j--a": old["j--a"]}, old) == ["j--b: only in the old run"]


def test_the_sides_turn_the_wheel_store_off_with_the_old_way_when_there_is_one() -> None:
    s = cost.sides()
    assert (s["new"]["gil_on"], s["old"]["gil_on"]) == ("targeted", "full")
    assert s["new"].get("wheel_store", True) is True and s["old"].get("wheel_store", False) is False


def test_the_section_renders_its_ratio_and_same_verdicts() -> None:
    walls = {"n": 2, "median": 60.0, "min": 50.0, "max": 70.0, "spread": 0.3, "values": [50.0, 70.0]}
    d = {
        "rounds": 2,
        "jobs": 2,
        "backend": "local",
        "packages": ["ft_clean", "msgpack==1.2.4"],
        "sides": cost.sides(),
        "new_wall": walls,
        "old_wall": {**walls, "median": 100.0},
        "ratio": 0.6,
        "per_round_ratio": [0.5, 0.7],
        "same_verdicts": True,
        "differences": [],
        "target_ratio": 0.6,
        "new": [{"gil_on": {"cpython3.13t--ft_clean": "none"}}],
    }
    text = "\n".join(report.cost_lines(d))
    assert "**ratio 0.6**" in text and "**same_verdicts true**" in text and "ft_clean none" in text
