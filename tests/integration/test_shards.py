"""The workflow's path, locally: a matrix run as 3 shards into 3 dirs, merged, equals one unsharded run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cli, fixture_matrix

pytestmark = [pytest.mark.integration, pytest.mark.slow]
PKGS = ["ft_baseline", "ft_clean", "ft_gilslot", "ft_nobuild", "ft_notests"]
SETTINGS = "settings: {repeat: 1, iterations: 2, gil_modes: [0, 1], test_timeout: 30}"


def normalised(report: dict) -> list[dict]:
    """A report without what legitimately differs between two runs: times and log text."""
    out = []
    for p in report["packages"]:
        out.append(
            {
                "job_id": p["job_id"],
                "name": p["name"],
                "version": p["version"],
                "verdict": p["verdict"],
                "qualifier": p.get("qualifier", ""),
                "findings": sorted(
                    (f["kind"], f.get("test_id", ""), tuple(f.get("modes", ())), f.get("ratio", ""))
                    for f in p["findings"]
                ),
                "phases": [(ph["name"], ph.get("exit_code")) for ph in p["phases"]],
            }
        )
    return out


def test_three_shards_merge_to_the_unsharded_report(tmp_path: Path, ft_interpreter) -> None:
    m = fixture_matrix(tmp_path, PKGS, SETTINGS)
    r = cli("run", "--matrix", str(m), "--out", str(tmp_path / "whole"), "--backend", "local", "--jobs", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    plan = json.loads(cli("plan", "--matrix", str(m), "--shards", "3", "--format", "github").stdout)
    shards = [e["shard"] for e in plan["include"]]
    assert len(shards) == 3
    dirs = []
    for s in shards:
        d = tmp_path / f"shard-{s.split('/')[0]}"
        r = cli("run", "--matrix", str(m), "--out", str(d), "--backend", "local", "--shard", s, "--jobs", "2")
        assert r.returncode == 0, r.stdout + r.stderr
        dirs.append(d)
    ids = [sorted(p.stem for p in (d / "results").glob("*.json")) for d in dirs]
    assert sum(len(i) for i in ids) == len(PKGS) and len(set().union(*map(set, ids))) == len(PKGS)
    r = cli("report", *map(str, dirs), "--out", str(tmp_path / "merged"), "--matrix", str(m))
    assert r.returncode == 0, r.stdout + r.stderr
    merged = json.loads((tmp_path / "merged" / "report.json").read_text())
    whole = json.loads((tmp_path / "whole" / "report.json").read_text())
    assert merged["missing"] == []
    assert normalised(merged) == normalised(whole)
    feeds_agree(tmp_path, m, dirs)
    # a shard missing from the merge is reported, not dropped
    r = cli("report", *map(str, dirs[:2]), "--out", str(tmp_path / "partial"), "--matrix", str(m))
    partial = json.loads((tmp_path / "partial" / "report.json").read_text())
    assert sorted(partial["missing"]) == ids[2]
    # the same job in two shards is an error naming both files
    dup = tmp_path / "dup"
    (dup / "results").mkdir(parents=True)
    src = next((dirs[0] / "results").glob("*.json"))
    doc = json.loads(src.read_text())
    doc["verdict"] = "crash"
    (dup / "results" / src.name).write_text(json.dumps(doc))
    r = cli("report", str(dirs[0]), str(dup), "--out", str(tmp_path / "bad"))
    assert r.returncode == 2 and src.name in r.stderr, r.stderr


def feed_ids(out: Path) -> dict[str, dict]:
    return {e["id"]: e for e in json.loads((out / "findings.json").read_text())["findings"]}


def feeds_agree(tmp_path: Path, m: Path, dirs: list[Path]) -> None:
    """Issue #57, acceptance 3: the ids of one matrix's unsplit run, its shards' merge and a second
    run are the same; a reported.yaml naming one id shows its link in the next run and its pages,
    and the feed after it keeps the link with no reported.yaml given."""
    whole = feed_ids(tmp_path / "whole")
    assert set(whole) == set(feed_ids(tmp_path / "merged"))
    gil = [i for i, e in whole.items() if e["package"] == "ft_gilslot" and e["kind"] == "gil-reenabled"]
    assert len(gil) == 1 and len(whole) >= 2, whole
    url = "https://github.com/example/ft-gilslot/issues/7"
    (tmp_path / "reported.yaml").write_text(f"# filed\n{gil[0]}: {url}\n")
    again = tmp_path / "again"  # the next run of the same matrix, told what was filed
    r = cli(
        "run",
        "--matrix",
        str(m),
        "--out",
        str(again),
        "--backend",
        "local",
        "--jobs",
        "2",
        "--reported",
        str(tmp_path / "reported.yaml"),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    now = feed_ids(again)
    assert set(now) == set(whole)
    assert now[gil[0]]["reported"] == url and all(not e.get("reported") for i, e in now.items() if i != gil[0])
    pages = [p for p in (again / "site").rglob("*.html") if url in p.read_text()]
    assert pages, "no page of the run shows the reported link"
    # a week later: the shards' merge, with no reported.yaml, the previous feed its memory
    r = cli("report", *map(str, dirs), "--out", str(tmp_path / "later"), "--matrix", str(m), "--previous", str(again))
    assert r.returncode == 0, r.stdout + r.stderr
    later = feed_ids(tmp_path / "later")
    assert set(later) == set(whole) and later[gil[0]]["reported"] == url


TOP = ["ft_notests", "ft_clean", "ft_baseline", "ft_gilslot"]  # the "download counts" order


@pytest.fixture
def local_index(tmp_path: Path):
    """A PEP 691 index on localhost serving our fixtures' sdists (relative file URLs, sha256)."""
    import hashlib
    import http.server
    import subprocess
    import sys
    import threading

    from tests.conftest import FIXTURES

    root = tmp_path / "index"
    files = root / "files"
    files.mkdir(parents=True)
    for name in TOP:
        r = subprocess.run(
            [sys.executable, "-m", "build", "-q", "--sdist", "--outdir", str(files), str(FIXTURES / name)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert r.returncode == 0, r.stderr[-2000:]
    pages: dict[str, tuple[str, str]] = {}  # /simple/<project>/ -> (PEP 691 JSON, PEP 503 HTML)
    for sd in files.glob("*.tar.gz"):
        project = sd.name.split("-", 1)[0].replace("_", "-")
        digest = hashlib.sha256(sd.read_bytes()).hexdigest()
        url = f"../../files/{sd.name}"
        page = {
            "meta": {"api-version": "1.1"},
            "name": project,
            "files": [{"filename": sd.name, "url": url, "hashes": {"sha256": digest}}],
        }
        html = f'<html><body><a href="{url}#sha256={digest}">{sd.name}</a></body></html>'
        pages[f"/simple/{project}/"] = (json.dumps(page), html)

    class Index(http.server.SimpleHTTPRequestHandler):
        """JSON for the harness (Accept: application/vnd.pypi.simple.v1+json), HTML for pip."""

        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(root), **kw)

        def do_GET(self) -> None:
            if self.path not in pages:
                return super().do_GET()
            want_json = "application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", "")
            body = pages[self.path][0 if want_json else 1].encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json" if want_json else "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/simple/"
    server.shutdown()


def test_a_top_n_selector_sharded_and_merged_equals_one_run(tmp_path: Path, ft_interpreter, local_index) -> None:
    # issue #14, acceptance 1: {top: 3} from a list, versions resolved once from the index when
    # the plan is made, 3 shards run from that record (asking the index nothing), merged
    from tests.conftest import INTERP_YAML

    (tmp_path / "names.txt").write_text("\n".join(TOP) + "\n")
    m = tmp_path / "matrix.yaml"
    m.write_text(SETTINGS + "\n" + INTERP_YAML + "packages:\n  - {top: 3, from: names.txt}\n")
    env = {"FT_HARNESS_INDEX_URL": local_index}
    record = tmp_path / "plan" / "resolved.json"
    r = cli("plan", "--matrix", str(m), "--shards", "3", "--format", "github", "--resolved", str(record), env=env)
    assert r.returncode == 0, r.stderr
    shards = [e["shard"] for e in json.loads(r.stdout)["include"]]
    resolved = json.loads(record.read_text())
    assert sorted((x["name"], x["version"]) for x in resolved) == [  # the top 3 of the list, not ft_gilslot
        ("ft-baseline", "1.0.0"),
        ("ft-clean", "1.0.0"),
        ("ft-notests", "1.0.0"),
    ]
    r = cli(
        "run",
        "--matrix",
        str(m),
        "--out",
        str(tmp_path / "whole"),
        "--backend",
        "local",
        "--jobs",
        "2",
        "--resolved",
        str(record),
        env=env,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    dirs = []
    for s in shards:
        d = tmp_path / f"shard-{s.split('/')[0]}"
        r = cli(
            "run",
            "--matrix",
            str(m),
            "--out",
            str(d),
            "--backend",
            "local",
            "--shard",
            s,
            "--resolved",
            str(record),
            env=env,
        )
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        dirs.append(d)
    r = cli(
        "report",
        *map(str, dirs),
        "--out",
        str(tmp_path / "merged"),
        "--matrix",
        str(m),
        "--resolved",
        str(record),
        env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    merged = json.loads((tmp_path / "merged" / "report.json").read_text())
    whole = json.loads((tmp_path / "whole" / "report.json").read_text())
    assert merged["missing"] == [] and len(merged["packages"]) == 3
    assert normalised(merged) == normalised(whole)
    got = {p["name"]: (p["version"], p["verdict"]) for p in whole["packages"]}
    assert got == {
        "ft-notests": ("1.0.0", "no-tests"),
        "ft-clean": ("1.0.0", "compatible"),
        "ft-baseline": ("1.0.0", "baseline-failure"),
    }
    fetch = next(ph for ph in whole["packages"][0]["phases"] if ph["name"] == "fetch")
    assert fetch["exit_code"] == 0
