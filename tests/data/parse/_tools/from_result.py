"""Store a real harness run's job as a parse/verdict test case (phases + logs + JUnit).

    python tests/data/parse/_tools/from_result.py OUT/results/<job>.json tests/data/parse/<case>

Only what the harness wrote is kept; the parsed fields are dropped (the tests parse again).
"""
import json
import shutil
import sys
from pathlib import Path

PARSED = ("tests", "counts", "crash", "hang", "gil_modules", "parallel", "tsan", "excerpt")


def main(result: str, case: str) -> None:
    res = Path(result)
    out_dir = res.parent.parent
    dest = Path(case)
    for sub in ("phases", "logs", "junit"):
        (dest / sub).mkdir(parents=True, exist_ok=True)
    d = json.loads(res.read_text())
    for p in d["phases"]:
        shutil.copy(out_dir / p["log"], dest / "logs" / f"{p['name']}.log")
        for extra in (".not-installed", ".json"):  # a phase's record beside its log (parse.testdeps, parse.probe)
            beside = (out_dir / p["log"]).with_suffix(extra)
            if beside.is_file():
                shutil.copy(beside, dest / "logs" / f"{p['name']}{extra}")
        p["log"] = f"logs/{p['name']}.log"
        if p.get("junit"):
            shutil.copy(out_dir / p["junit"], dest / "junit" / f"{p['name']}.xml")
            p["junit"] = f"junit/{p['name']}.xml"
        for k in PARSED:
            p.pop(k, None)
        (dest / "phases" / f"{p['name']}.json").write_text(json.dumps(p, indent=1) + "\n")
    (dest / "CMD").write_text(f"# a real harness run: {d['package']} on {d['interpreter']['name']} "
                              f"({d['backend']} backend), settings {json.dumps(d['settings'])}\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
