"""Write tests/data/tsan/result_schema3.json: a job result whose tsan phases hold the reports
parsed from the captured logs here, with the findings the verdict made of them.

    python3 tests/data/tsan/make_result.py

The committed file was written by the harness at commit 0de6995, when ``Phase.tsan`` was a
tuple of plain dicts; tests/unit/parse/test_parse_tsan.py reads it back with today's types and checks
that the reports and findings come out the same.  Not run by the test suite.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from harness.core.model import InterpreterInfo, JobResult, Phase  # noqa: E402
from harness.parse.tsan import parse_tsan_dir  # noqa: E402
from harness.verdict.tsan import tsan_findings  # noqa: E402

OUT = HERE / "result_schema3.json"
# phase name -> the captured logs its tsan log directory held, as <prefix>.<pid>
PHASES = {
    "tsan-gil0-r1": {
        "tsan.101": HERE / "c" / "race_markers.log",
        "tsan.102": HERE / "c" / "uaf_lockorder.log",
        "tsan.103": HERE / "c" / "segv.log",
        "tsan.4131": HERE / "py" / "counter_lines" / "tsan.4131",
        "tsan.5000": HERE / "py" / "install_nosupp.log",  # interpreter-only: no finding
        "tsan.5001": HERE / "c" / "uaf_lockorder.log",  # cut in its second report: see TRUNCATED
    },
    "tsan-gil0-r2": {
        "tsan.201": HERE / "c" / "race_markers.log",
        "tsan.1": HERE / "py" / "counter_noline" / "tsan.1",
    },
}
TRUNCATED = {"tsan.5001": "Mutex M0 acquired here"}  # log -> the text it is cut before


def main() -> int:
    phases = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep, (name, logs) in enumerate(PHASES.items(), 1):
            d = Path(tmp) / name
            d.mkdir()
            for dest, src in logs.items():
                text = src.read_text()
                if dest in TRUNCATED:
                    text = text[: text.index(TRUNCATED[dest])]
                (d / dest).write_text(text)
            phases.append(Phase(name=name, kind="tsan", gil=0, rep=rep, exit_code=0,
                                tsan=tuple(parse_tsan_dir(d))))
    interp = InterpreterInfo.from_dict({
        "name": "cpython3.13t-tsan", "version": "3.13.5", "key": "3.13.5-tsan-example",
        "configure": ["--disable-gil", "--with-thread-sanitizer"], "free_threaded": True,
        "sanitizer": "thread", "python": "/opt/ft313t-tsan/bin/python3.13t", "source": "debian:trixie",
    })
    result = JobResult(job_id="cpython3.13t-tsan--tsan-samples", key="tsan-samples-example",
                       package="tsan-samples", interpreter=interp, phases=tuple(phases),
                       findings=tuple(tsan_findings(phases)), verdict="ft-race")
    OUT.write_text(json.dumps(result.to_dict(), indent=1) + "\n")
    print(f"wrote {OUT}: {sum(len(p.tsan) for p in phases)} reports, {len(result.findings)} findings")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
