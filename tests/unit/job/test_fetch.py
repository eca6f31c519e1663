"""harness.job.fetch and the index's credentials (#30): the page of an index is not trusted (scheme,
sha256), and a token in $FT_HARNESS_INDEX_URL reaches neither package code nor any text."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import tarfile
import threading
from pathlib import Path

import pytest

from harness.config import indexclient
from harness.config.matrix import loads
from harness.config.plan import make_plan
from harness.job import fetch
from harness.job.context import base_env as _base_env
from tests.conftest import INTERP_YAML


def _sdist(where: Path, name: str = "demo", version: str = "1.0") -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{name}-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        data = b"[project]\nname = 'demo'\n"
        info = tarfile.TarInfo(f"{name}-{version}/pyproject.toml")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return path


def _page(url: str, sha: str | None) -> dict:
    f: dict = {"filename": "demo-1.0.tar.gz", "url": url}
    if sha is not None:
        f["hashes"] = {"sha256": sha}
    return {"files": [f]}


def test_a_file_url_from_an_https_index_is_not_fetched(tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.tar.gz"  # a host file the page points at
    secret.write_bytes(b"host data")
    sha = hashlib.sha256(b"host data").hexdigest()
    with pytest.raises(fetch.NoSdist, match="gives a file: URL; only https is fetched"):
        fetch.sdist(
            "demo",
            "",
            tmp_path / "sdist",
            page=lambda n: _page(secret.as_uri(), sha),
            index="https://pypi.org/simple/demo/",
        )
    with pytest.raises(fetch.NoSdist, match="gives a http: URL"):
        fetch.sdist(
            "demo",
            "",
            tmp_path / "sdist",
            page=lambda n: _page("http://example.org/demo-1.0.tar.gz", sha),
            index="https://pypi.org/simple/demo/",
        )
    assert not (tmp_path / "sdist").exists()


def test_a_file_without_sha256_or_with_another_is_not_kept(tmp_path: Path) -> None:
    sd = _sdist(tmp_path / "index")
    index = (tmp_path / "index").as_uri() + "/"
    with pytest.raises(fetch.NoSdist, match="gives no sha256"):
        fetch.sdist("demo", "", tmp_path / "sdist", page=lambda n: _page(sd.as_uri(), None), index=index)
    with pytest.raises(fetch.NoSdist, match="does not match"):
        fetch.sdist("demo", "", tmp_path / "sdist", page=lambda n: _page(sd.as_uri(), "0" * 64), index=index)
    assert list((tmp_path / "sdist").iterdir()) == []
    got = fetch.sdist(
        "demo",
        "",
        tmp_path / "sdist",  # a file: index may list file: URLs
        page=lambda n: _page(sd.as_uri(), hashlib.sha256(sd.read_bytes()).hexdigest()),
        index=index,
    )
    assert got.path.read_bytes() == sd.read_bytes()


def test_the_fetch_keeps_the_release_files_of_the_page_it_read(tmp_path: Path) -> None:
    """The page is read once per job: the wheel column takes the release's files from here."""
    sd = _sdist(tmp_path / "index")
    page = _page(sd.as_uri(), hashlib.sha256(sd.read_bytes()).hexdigest())
    page["files"] += [
        {"filename": "demo-1.0-cp313-cp313t-manylinux_2_28_x86_64.whl", "url": sd.as_uri()},
        {"filename": "demo-0.9-py3-none-any.whl", "url": sd.as_uri()},
        "not a file entry",
    ]
    reads = []
    got = fetch.sdist(
        "demo",
        "",
        tmp_path / "sdist",
        page=lambda n: reads.append(n) or page,
        index=(tmp_path / "index").as_uri() + "/",
    )
    assert reads == ["demo"]
    assert got.files == ("demo-1.0.tar.gz", "demo-1.0-cp313-cp313t-manylinux_2_28_x86_64.whl")


class _Index(http.server.BaseHTTPRequestHandler):
    """A PEP 691 index on 127.0.0.1 that wants basic auth user:tok3n (as a private index does)."""

    sdist: bytes = b""
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802
        self.seen.append(f"{self.path} {self.headers.get('Authorization', '')}")
        if self.headers.get("Authorization") != "Basic " + base64.b64encode(b"user:tok3n").decode():
            self.send_response(401)
            self.end_headers()
            return
        if self.path == "/simple/demo/":
            import json

            body = json.dumps(_page("../../files/demo-1.0.tar.gz", hashlib.sha256(self.sdist).hexdigest())).encode()
        else:
            body = self.sdist
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_index_credentials_go_in_a_header_and_nowhere_else(tmp_path: Path, monkeypatch) -> None:
    _Index.sdist = _sdist(tmp_path / "files").read_bytes()
    _Index.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        index = f"http://user:tok3n@127.0.0.1:{server.server_port}/simple/"
        monkeypatch.setenv(indexclient.INDEX_ENV, index)
        got = fetch.sdist("demo", "", tmp_path / "sdist")
    finally:
        server.shutdown()
    assert got.path.read_bytes() == _Index.sdist
    assert [s.split()[0] for s in _Index.seen] == ["/simple/demo/", "/files/demo-1.0.tar.gz"]
    assert "tok3n" not in got.url and got.url.startswith(f"http://127.0.0.1:{server.server_port}/")
    # package code (pip, in the job's env: every log header and result shows it) gets no token
    job = make_plan(loads(INTERP_YAML + "packages: [{name: six}]\n"))[0]
    env = _base_env(job)
    assert env["PIP_EXTRA_INDEX_URL"] == f"http://127.0.0.1:{server.server_port}/simple/"
    assert indexclient.redact("https://u:p@h.example:8443/simple/") == "https://h.example:8443/simple/"


def test_an_unreachable_index_names_no_token(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(indexclient.INDEX_ENV, "http://user:tok3n@127.0.0.1:9/simple/")
    with pytest.raises(fetch.IndexUnavailable) as e:
        fetch.sdist("demo", "", tmp_path / "sdist")
    assert "tok3n" not in str(e.value)
