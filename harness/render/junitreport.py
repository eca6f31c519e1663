"""The report (harness.results.report) -> junit.xml: one test case per package x finding, for CI systems.

A testsuite per interpreter (in the report's column order); a compatible package is one passing case; each
finding is a case that fails (``infra-error`` is an error: the harness's
problem, not the package's, as is an ``infra-error`` verdict whose findings are only shown
ones, e.g. ``budget-spent``; ``no-thread-coverage`` and the other shown kinds are skipped: never
red); a ``no-tests`` or ``skipped`` package is one skipped case.  Text from packages is put
in through ElementTree, which escapes it, after dropping the characters XML
1.0 cannot carry (ANSI escapes and other control characters in logs).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from ..core.model import INFO_KINDS, Finding
from ..results.report import CompatReport, JobEntry

_BAD_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
MAX_TEXT = 20_000


def clean(s: Any) -> str:
    s = _BAD_XML.sub("", str(s))
    return s if len(s) <= MAX_TEXT else s[:MAX_TEXT] + "\n[... truncated]"


def _case_name(f: Finding) -> str:
    return f"{f.kind}: {f.test_id}" if f.test_id else f.kind


def _body(f: Finding) -> str:
    parts = []
    if f.modes:
        parts.append("modes: " + ", ".join(f"PYTHON_GIL={m}" for m in f.modes))
    if f.ratio:
        parts.append(f"seen in {f.ratio} runs")
    if f.evidence:
        parts.append(f"evidence: {f.evidence}")
    if f.phase:
        parts.append(f"phase: {f.phase}")
    if f.reproduce:
        parts.append(f"reproduce: {f.reproduce}")
    if f.excerpt:
        parts.append("\n" + f.excerpt)
    return clean("\n".join(parts))


def _case(suite: ET.Element, p: JobEntry, name: str, time: float) -> ET.Element:
    return ET.SubElement(
        suite,
        "testcase",
        {"classname": clean(f"{p.interpreter.name}.{p.name}"), "name": clean(name), "time": f"{time:.3f}"},
    )


def render(report: CompatReport) -> str:
    root = ET.Element("testsuites", {"name": "ft-harness"})
    by_interp: dict[str, list[JobEntry]] = {}
    for p in report.packages:
        by_interp.setdefault(p.interpreter.name, []).append(p)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    order = [c.name for c in report.interpreters]  # the report's column order
    for interp in sorted(by_interp, key=lambda n: (order.index(n) if n in order else len(order), n)):
        suite = ET.SubElement(root, "testsuite", {"name": clean(f"free-threaded {interp}")})
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        time = 0.0
        for p in by_interp[interp]:
            time += p.duration
            blocking = [f for f in p.findings if f.kind not in INFO_KINDS]
            info = [f for f in p.findings if f.kind in INFO_KINDS and f.kind != "skipped"]
            if not blocking:
                label = p.verdict_label
                case = _case(suite, p, f"verdict: {label}", p.duration)
                counts["tests"] += 1
                if p.verdict == "no-tests":
                    ET.SubElement(case, "skipped", {"message": "the package has no runnable tests"})
                    counts["skipped"] += 1
                elif p.verdict == "skipped":  # a recipe registry's skip: its reason is the message
                    why = next((f.message for f in p.findings if f.kind == "skipped"), "not run")
                    ET.SubElement(case, "skipped", {"message": clean(why)})
                    counts["skipped"] += 1
                elif p.verdict != "compatible":
                    # infra-error with only shown findings (budget-spent): the harness's problem;
                    # any other verdict with no finding should not happen: never hide it as a pass
                    tag = "error" if p.verdict == "infra-error" else "failure"
                    ET.SubElement(case, tag, {"message": clean(label), "type": p.verdict})
                    counts["errors" if tag == "error" else "failures"] += 1
            for f in blocking:
                case = _case(suite, p, _case_name(f), 0.0)
                counts["tests"] += 1
                tag = "error" if f.kind == "infra-error" else "failure"
                counts["errors" if tag == "error" else "failures"] += 1
                el = ET.SubElement(case, tag, {"message": clean(f.message or f.kind), "type": f.kind})
                el.text = _body(f)
            for f in info:
                case = _case(suite, p, _case_name(f), 0.0)
                counts["tests"] += 1
                counts["skipped"] += 1
                el = ET.SubElement(case, "skipped", {"message": clean(f.message or f.kind)})
                el.text = _body(f)
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
        suite.set("time", f"{time:.3f}")
    for k, v in totals.items():
        root.set(k, str(v))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
