"""The benchmark's JSON document -> the printed sections and benchmarks/results/latest.md."""

from __future__ import annotations

from typing import Any


def _x(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}×"


def _s(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f} s"


def _band(s: dict[str, Any]) -> str:
    if not s or not s.get("n"):
        return "n/a"
    return f"{_x(s['median'])} ({s['min']:.3f}–{s['max']:.3f}, n={s['n']})"


def _ok(value: float | None, target: float) -> str:
    if value is None:
        return "—"
    return "met" if value <= target else "missed"


def overhead_lines(d: dict[str, Any]) -> list[str]:
    out = [
        f"## 1. overhead (harness vs bare, {d['rounds']} rounds, A B then B A alternating; target ≤ {d['target']}×)",
        "",
        "| package | verdict | test phases | whole job | harness wall | bare total | harness's own time |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, p in d["packages"].items():
        out.append(
            f"| {name} | {p['verdict']} | {_band(p['test_phases'])} | {_band(p['whole_job'])} | "
            f"{_s(p['harness_wall']['median'])} | {_s(p['bare_total']['median'])} | "
            f"{_s(p['own_seconds']['median'])} |"
        )
    out += [
        "",
        f"All packages pooled: test phases {_band(d['all_test_phases'])} "
        f"[{_ok(d['all_test_phases']['median'], d['target'])}], whole job "
        f"{_band(d['all_whole_job'])} [{_ok(d['all_whole_job']['median'], d['target'])}].",
    ]
    return out


def schedule_lines(d: dict[str, Any]) -> list[str]:
    out = [
        f"## 2. schedule (makespan vs max(Σ job time / workers, longest job); target ≤ {d['target']}×)",
        "",
        "| matrix | --jobs | jobs | Σ job time | longest | lower bound | job span | ratio (span) | "
        "CLI wall | ratio (wall) | best split of these jobs | span / best |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in d["matrices"]:
        for key in ("j1", "j2"):
            r = m[key]
            out.append(
                f"| {m['matrix']} | {r['jobs']} | {r['n_jobs']} | {_s(r['sum_job_seconds'])} | "
                f"{_s(r['longest_job'])} | {_s(r['lower_bound'])} | {_s(r['span'])} | "
                f"{_x(r['ratio_span'])} | {_s(r['wall'])} | {_x(r['ratio_wall'])} | "
                f"{_s(r.get('best_makespan'))} | {_x(r.get('ratio_span_best'))} |"
            )
        order = f" (--jobs {m['first']} ran first)" if m.get("first") == 2 else ""
        where = f", {m['backend']} backend" if m.get("backend", "local") != "local" else ""
        out.append(f"| {m['matrix']}{where} | speed-up 1→2{order} | | | | | | | {_x(m['speedup_wall'])} | |")
    for note in d.get("skipped", []):
        out += ["", f"Not measured: {note}"]
    return out


def cache_lines(d: dict[str, Any]) -> list[str]:
    c2, c1 = d["second_cli"], d["first_cli"]
    dl = d["first_run_downloads"]
    n_dl = sum(len(v) for v in dl.values())
    forced = d.get("force_rerun_downloads")
    out = [
        "## 3. cache (a second identical run vs the first; target: 0 builds/downloads)",
        "",
        "| run | wall | interpreter builds | cache hits | jobs ran | reused | network downloads |",
        "|---|---|---|---|---|---|---|",
        f"| first (fresh --out) | {_s(d['first_wall'])} | {c1['interpreter_builds']} | "
        f"{c1['interpreter_cache_hits']} | {c1['jobs_ran']} | {c1['jobs_reused']} | {n_dl} |",
        f"| second (same command) | {_s(d['second_wall'])} | {c2['interpreter_builds']} | "
        f"{c2['interpreter_cache_hits']} | {c2['jobs_ran']} | {c2['jobs_reused']} | 0 (no job ran) |",
    ]
    if forced is not None:
        out.append(f"| --force rerun (overhead rounds, per job) | | 0 | | 1 | 0 | {forced} |")
    out += [
        "",
        f"Second/first wall: {_x(d['ratio'])}; result files rewritten by the second run: "
        f"{len(d['results_rewritten'])}.",
    ]
    return out


def scale_lines(d: dict[str, Any]) -> list[str]:
    out = [
        f"## 4. scale (synthetic results; target: {d['largest']:,}-package report < "
        f"{d['target_report_seconds']:.0f} s)",
        "",
        "| packages | matrix load | plan | plan ms/pkg | report (wall) | report (CPU) | "
        "report ms/pkg | load_results | build_report | write_all |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in d["rows"]:
        out.append(
            f"| {r['packages']:,} | {r['matrix_load']:.3f} s | {r['plan']:.3f} s | "
            f"{r['plan_ms_per_package']:.3f} | {r['report']:.2f} s | {r['report_cpu']:.2f} s | "
            f"{r['report_ms_per_package']:.2f} | {r['load_results']:.2f} s | "
            f"{r['build_report']:.2f} s | {r['write_all']:.2f} s |"
        )
    ok = _ok(d["largest_report_seconds"], d["target_report_seconds"])
    out += [
        "",
        f"{d['largest']:,}-package report: {d['largest_report_seconds']:.1f} s wall, "
        f"{d['largest_report_cpu_seconds']:.1f} s CPU [{ok}].",
    ]
    if d.get("profile"):
        out += ["", f"Slowest functions (cProfile, own time, at {d['profile']['packages']:,} packages):", ""]
        out += [
            f"- `{f['function']}`: {f['tottime']:.2f} s own, {f['cumtime']:.2f} s cumulative, {f['calls']} calls"
            for f in d["profile"]["top"]
        ]
    return out


def confirm_lines(d: dict[str, Any]) -> list[str]:
    def sec(x: dict[str, Any]) -> str:
        if not x.get("n"):
            return "n/a"
        return f"median {x['median']:.1f} s ({x['min']:.1f}–{x['max']:.1f}, n={x['n']})"

    return [
        f"## Confirmation (confirm: {d['confirm']} per GIL mode, {', '.join(d['fixtures'])})",
        "",
        f"- extra wall per run: {sec(d['extra_wall_seconds'])}",
        f"- extra wall per confirmed finding: {sec(d['extra_wall_per_finding'])}",
        f"- the confirm phases' own seconds per finding: {sec(d['confirm_phase_seconds_per_finding'])}",
        f"- {d['hang_note']}",
    ]


def sweep_lines(d: dict[str, Any]) -> list[str]:
    from benchmarks.sweep import lines  # the sweep renders its own section (also run alone)

    return lines(d)


def cost_lines(d: dict[str, Any]) -> list[str]:
    from benchmarks.cost import lines  # the cost section renders its own (issue #34)

    return lines(d)


def stability_lines(d: dict[str, Any]) -> list[str]:
    from benchmarks.stability import lines  # the stability section renders its own (issue #47)

    return lines(d)


def render(doc: dict[str, Any]) -> str:
    m = doc["meta"]
    lines = [
        "# ft-harness benchmark (latest)",
        "",
        f"{m['date']} · {m['cpus']} CPUs · load average at start {m['load_start']}, at end "
        f"{m.get('load_end', '?')} · total {m.get('total_seconds', 0):.0f} s · "
        f"`{m['command']}`",
        "",
    ]
    for key, fn in (
        ("overhead", overhead_lines),
        ("schedule", schedule_lines),
        ("cache", cache_lines),
        ("scale", scale_lines),
        ("confirm", confirm_lines),
        ("sweep", sweep_lines),
        ("cost", cost_lines),
        ("stability", stability_lines),
    ):
        if key in doc["sections"]:
            sec = doc["sections"][key]
            lines += fn(sec)
            m_ = sec.get("measured")
            if m_ and doc["meta"].get("merged_from"):
                lines += ["", f"_measured {m_['date']}, load average at start {m_['load_start']}_"]
            lines += [""]
        elif key in doc.get("errors", {}):
            lines += [f"## {key}: failed", "", "```", doc["errors"][key][-1500:], "```", ""]
    if "tsan" in doc["sections"]:
        lines += [
            "## TSan cost (benchmarks/tsan_cost.py)",
            "",
            "```",
            str(doc["sections"]["tsan"].get("stdout", ""))[-3000:],
            "```",
            "",
        ]
    for note in doc.get("notes", []):
        lines.append(f"- {note}")
    return "\n".join(lines).rstrip() + "\n"
