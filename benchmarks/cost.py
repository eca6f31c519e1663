"""Section "cost": the default settings against the previous way, per package (issue #34).

The same matrix -- verdict fixtures and a few real PyPI packages that build from source -- runs
with the harness's default settings (``Settings()``: threads 4, iterations 5, repeat 3, confirm 5) (``gil_on: targeted``; the shared wheel store on, where the harness
has that setting) and with the previous way (``gil_on: full``; ``wheel_store: false``), side by
side in one run, in alternating order (new then old, then old then new) so neither side always
finds the warmer caches. Reported: ``ratio`` (wall time new / old, the medians of the rounds'
sums) and ``same_verdicts``: true only if every package's verdict and its findings' kinds and
test ids are the same on both sides in every round (``compare``; unit-tested in
tests/unit/benchmarks/test_bench_cost.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.config.matrix import Settings

from .common import fixture, ratio, results, run_cli, summarize, write_matrix

log = logging.getLogger(__name__)
FIXTURES = ("ft_clean", "ft_baseline", "ft_threadunsafe", "ft_sharedbuf", "ft_realloc", "ft_gilslot", "ft_mixed")
# compiled, built from their sdists on a cp313t build (no wheel of theirs for it); ujson's suite
# is of real size (~30 s of tests a mode), the others' a few seconds, as the fixtures'
REAL = (
    {"name": "markupsafe", "version": "==3.0.4"},
    {"name": "msgpack", "version": "==1.2.4"},
    {"name": "ujson", "version": "==6.1.0"},
)
JOBS = 2


def sides() -> dict[str, dict[str, Any]]:
    """The settings each side adds to the benchmark's light ones: new (the defaults) and old."""
    new: dict[str, Any] = {"gil_on": "targeted"}
    old: dict[str, Any] = {"gil_on": "full"}
    if "wheel_store" in Settings.__dataclass_fields__:  # the shared wheel store (harness.store.wheelstore)
        new["wheel_store"], old["wheel_store"] = True, False
    return {"new": new, "old": old}


def said(result: Mapping[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """What a job's result decided: its verdict, and its findings' kinds and test ids."""
    found = sorted((str(f.get("kind", "")), str(f.get("test_id", ""))) for f in result.get("findings", ()))
    return str(result.get("verdict", "")), found


def compare(new: Mapping[str, Mapping[str, Any]], old: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Every difference between two runs' results (job id -> result): a job on one side only,
    another verdict, other findings. [] when they decided the same."""
    out = []
    for job in sorted(set(new) | set(old)):
        if job not in new or job not in old:
            out.append(f"{job}: only in the {'new' if job in new else 'old'} run")
            continue
        a, b = said(new[job]), said(old[job])
        if a[0] != b[0]:
            out.append(f"{job}: verdict {a[0]} (new) vs {b[0]} (old)")
        elif a[1] != b[1]:
            out.append(f"{job}: findings {a[1]} (new) vs {b[1]} (old)")
    return out


def gil_on_runs(res: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Per job, what its GIL-on runs ran (JobResult.gil_on)."""
    return {job: (r.get("gil_on") or {}).get("ran", "") for job, r in res.items()}


def _one(tmp: Path, side: str, extra: dict[str, Any], packages: list[dict[str, Any]], tag: str) -> dict[str, Any]:
    # the harness's own defaults (harness.core.jobspec.Settings: threads 4, iterations 5, repeat
    # 3, confirm 5), not the other sections' light ones: at repeat 1 / iterations 2 the installs and
    # confirmations, the same on both sides, are most of a job (ratio 0.93 measured that way)
    m = write_matrix(tmp / f"cost-{tag}.yaml", packages, settings={"gil_modes": [0, 1], **extra})
    out = tmp / f"out-cost-{tag}"
    run = run_cli("run", "--matrix", str(m), "--out", str(out), "--backend", "local", "--force", "--jobs", str(JOBS))
    res = results(out)
    per = {r["package"]: round(sum(p["duration"] for p in r["phases"]), 1) for r in res.values()}
    return {
        "side": side,
        "wall": run.wall,
        "phase_seconds": round(sum(per.values()), 1),
        "per_package": per,
        "verdicts": {k: r["verdict"] for k, r in res.items()},
        "gil_on": gil_on_runs(res),
        "_res": res,
    }


def measure(tmp: Path, rounds: int = 2, real: bool = True) -> dict[str, Any]:
    packages = [fixture(n) for n in FIXTURES] + (list(REAL) if real else [])
    by_side: dict[str, list[dict[str, Any]]] = {"new": [], "old": []}
    diffs: list[str] = []
    for i in range(rounds):
        order = ["new", "old"] if i % 2 == 0 else ["old", "new"]
        for side in order:
            log.info("cost: round %d, %s (%s)", i + 1, side, sides()[side])
            by_side[side].append(_one(tmp, side, sides()[side], packages, f"{side}{i}"))
        diffs += [f"round {i + 1}: {d}" for d in compare(by_side["new"][i].pop("_res"), by_side["old"][i].pop("_res"))]
    per_package = (
        {
            p: ratio(
                sum(r["per_package"].get(p, 0.0) for r in by_side["new"]),
                sum(r["per_package"].get(p, 0.0) for r in by_side["old"]),
            )
            for p in sorted(by_side["new"][0]["per_package"])
        }
        if rounds
        else {}
    )
    new_wall = summarize([r["wall"] for r in by_side["new"]])
    old_wall = summarize([r["wall"] for r in by_side["old"]])
    return {
        "packages": [p["name"] + p.get("version", "") for p in packages],
        "rounds": rounds,
        "jobs": JOBS,
        "backend": "local",
        "sides": sides(),
        "new": by_side["new"],
        "old": by_side["old"],
        "new_wall": new_wall,
        "old_wall": old_wall,
        "ratio": ratio(new_wall["median"] or 0.0, old_wall["median"] or 0.0),
        "per_round_ratio": [ratio(a["wall"], b["wall"]) for a, b in zip(by_side["new"], by_side["old"], strict=True)],
        "same_verdicts": not diffs,
        "differences": diffs,
        "target_ratio": 0.6,
        "per_package_ratio": per_package,  # a job's summed phase seconds, new / old, over the rounds
    }


def lines(d: dict[str, Any]) -> list[str]:
    """The section in latest.md."""

    def walls(x: dict[str, Any]) -> str:
        return f"median {x['median']:.0f} s ({', '.join(f'{v:.0f}' for v in x['values'])})" if x.get("n") else "n/a"

    ran = {k.split("--", 1)[-1]: v for r in d["new"] for k, v in r["gil_on"].items()}
    out = [
        f"## Cost: default settings vs the previous way ({d['rounds']} round(s), --jobs {d['jobs']}, "
        f"{d['backend']} backend)",
        "",
        f"- packages: {', '.join(d['packages'])}",
        f"- new {d['sides']['new']}: {walls(d['new_wall'])}; old {d['sides']['old']}: {walls(d['old_wall'])}",
        f"- **ratio {d['ratio']}** (new / old wall; per round {d['per_round_ratio']}; target ≤ {d['target_ratio']}),"
        f" **same_verdicts {str(d['same_verdicts']).lower()}**",
        f"- GIL-on runs with the defaults: {', '.join(f'{k} {v}' for k, v in sorted(ran.items()))}",
        f"- per package (phase seconds, new / old): "
        f"{', '.join(f'{k} {v}' for k, v in sorted((d.get('per_package_ratio') or {}).items()))}",
    ]
    out += [f"- differs: {x}" for x in d["differences"]]
    return out
