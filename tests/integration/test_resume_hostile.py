"""Resume over hostile result files (issue #29, acceptance 3), through the real CLI.

Three packages whose sdists (from an index on loopback) are bz2 bombs: each job ends at
extraction with a result naming ``extract_bytes``, no build.  Their result files are then
replaced by a FIFO, a link to /dev/zero and a 100,000-deep JSON, and the same command runs
again: one line per bad file, no hang, no traceback, and every job gets its result again.
"""

from __future__ import annotations

import bz2
import hashlib
import http.server
import io
import json
import os
import tarfile
import threading
from pathlib import Path

import pytest

from tests.conftest import INTERP_YAML, cli

pytestmark = [pytest.mark.integration]
NAMES = ("bomb-fifo", "bomb-zero", "bomb-deep")


def _bomb() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo("bomb-1.0/zeros.bin")
        info.size = 4 << 20
        tf.addfile(info, io.BytesIO(bytes(info.size)))
    return bz2.compress(buf.getvalue())


BOMB = _bomb()


class Index(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        name = self.path.strip("/").split("/")[-1]
        if self.path.startswith("/simple/"):
            fn = f"{name.replace('-', '_')}-1.0.tar.gz"
            body = json.dumps(
                {
                    "files": [
                        {"filename": fn, "url": f"/files/{fn}", "hashes": {"sha256": hashlib.sha256(BOMB).hexdigest()}}
                    ]
                }
            ).encode()
        else:
            body = BOMB
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_resume_over_a_fifo_a_dev_zero_link_and_deep_json(tmp_path: Path, ft_interpreter) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        "FT_HARNESS_INDEX_URL": f"http://127.0.0.1:{server.server_port}/simple/",
        "FT_HARNESS_LIMIT_EXTRACT_BYTES": str(1 << 20),
    }
    m = tmp_path / "matrix.yaml"
    m.write_text(INTERP_YAML + "packages:\n" + "".join(f"  - {{name: {n}}}\n" for n in NAMES))
    out = tmp_path / "out"
    args = ("run", "--matrix", str(m), "--out", str(out), "--backend", "local", "--jobs", "1")
    try:
        first = cli(*args, env=env, timeout=600)
        found = sorted((out / "results").glob("*.json"))
        assert len(found) == 3, first.stdout[-2000:] + first.stderr[-2000:]
        for p in found:
            d = json.loads(p.read_text())
            assert d["verdict"] == "infra-error"
            assert "limit extract_bytes (1048576) exceeded" in d["findings"][0]["message"]
        by = {n: next(p for p in found if p.stem.endswith(n)) for n in NAMES}
        by["bomb-fifo"].unlink()
        os.mkfifo(by["bomb-fifo"])
        by["bomb-zero"].unlink()
        by["bomb-zero"].symlink_to("/dev/zero")
        by["bomb-deep"].write_text("[" * 100_000 + "]" * 100_000)
        again = cli(*args, env=env, timeout=300)  # a hang fails here (subprocess timeout)
    finally:
        server.shutdown()
    text = again.stdout + again.stderr
    assert "Traceback" not in text, text[-3000:]
    lines = [ln for ln in text.splitlines() if "the job runs again" in ln]
    assert len(lines) == 3, text[-3000:]
    assert any(str(by["bomb-fifo"]) in ln and "not a regular file" in ln for ln in lines)
    assert any(str(by["bomb-zero"]) in ln and "points outside its results dir" in ln for ln in lines)
    assert any(str(by["bomb-deep"]) in ln and "nested too deeply" in ln for ln in lines)
    for n in NAMES:  # each job ran again and wrote a regular result file over the bad one
        assert by[n].is_file() and not by[n].is_symlink()
        assert json.loads(by[n].read_text())["verdict"] == "infra-error"
