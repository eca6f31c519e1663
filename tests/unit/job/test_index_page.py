"""The host's requests to the index (#46): the project page read with a size cap and every parse
error caught (a deep page was a RecursionError out of `run --reuse`), and each redirect checked
again: never to a non-https URL, and the index's credentials never sent on to another host.

Real HTTP servers on loopback (two of them: a different port is a different host for
credentials), real urllib; nothing mocked."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from harness.config import indexclient
from harness.job import fetch

SHA = "c" * 64


class _Server(http.server.BaseHTTPRequestHandler):
    routes: dict[str, tuple[int, dict[str, str], bytes]] = {}
    seen: list[tuple[str, str]] = []  # (path, Authorization header)

    def do_GET(self) -> None:  # noqa: N802
        type(self).seen.append((self.path, self.headers.get("Authorization", "")))
        code, headers, body = type(self).routes.get(self.path, (404, {}, b"no"))
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a: object) -> None:
        pass


@contextmanager
def _server() -> Iterator[tuple[str, type[_Server]]]:
    handler = type("H", (_Server,), {"routes": {}, "seen": []})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", handler
    finally:
        srv.shutdown()
        srv.server_close()


def _page(sha: str = SHA) -> bytes:
    return json.dumps(
        {
            "meta": {"api-version": "1.0"},
            "name": "six",
            "files": [{"filename": "six-1.17.0.tar.gz", "url": "six-1.17.0.tar.gz", "hashes": {"sha256": sha}}],
        }
    ).encode()


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
        (b'{"files": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
        (b'{"files": 3}', "not a PEP 691 project page"),
        (b"\xff\xfe not json", "page for six"),
    ],
)
def test_a_bad_page_is_index_unavailable_never_an_escaping_error(monkeypatch, body, why):
    with _server() as (url, h):
        h.routes["/simple/six/"] = (200, {"Content-Type": "application/json"}, body)
        monkeypatch.setenv(indexclient.INDEX_ENV, url + "/simple/")
        with pytest.raises(fetch.IndexUnavailable, match=why):
            fetch.sdist_sha256("six", "==1.17.0")


def test_a_huge_page_is_read_only_up_to_the_cap(monkeypatch):
    monkeypatch.setattr(indexclient, "MAX_PAGE_BYTES", 1 << 20)
    with _server() as (url, h):
        h.routes["/simple/six/"] = (200, {}, _page()[:-1] + b" " * (2 << 20) + b"}")
        monkeypatch.setenv(indexclient.INDEX_ENV, url + "/simple/")
        with pytest.raises(fetch.IndexUnavailable, match="larger than 1 MiB"):
            fetch.sdist_sha256("six", "==1.17.0")
        h.routes["/simple/six/"] = (200, {}, _page())
        assert fetch.sdist_sha256("six", "==1.17.0") == SHA


def test_credentials_are_dropped_on_a_redirect_to_another_host(monkeypatch):
    with _server() as (index, ih), _server() as (other, oh):
        ih.routes["/simple/six/"] = (302, {"Location": other + "/six/"}, b"")
        ih.routes["/simple/idna/"] = (302, {"Location": "/simple/idna-moved/"}, b"")
        ih.routes["/simple/idna-moved/"] = (200, {}, _page())
        oh.routes["/six/"] = (200, {}, _page())
        user = index.replace("http://", "http://user:s3cret@")
        monkeypatch.setenv(indexclient.INDEX_ENV, user + "/simple/")
        assert fetch.sdist_sha256("six", "==1.17.0") == SHA
        assert ih.seen[0][1].startswith("Basic ")  # the index itself gets them
        assert oh.seen == [("/six/", "")]  # the other host does not
        indexclient.simple_json("idna")  # a redirect within the index's host keeps them
        assert [a for p, a in ih.seen if p == "/simple/idna-moved/"][0].startswith("Basic ")


def test_a_redirect_to_plain_http_on_another_host_is_not_followed(monkeypatch):
    with _server() as (index, ih):
        ih.routes["/simple/six/"] = (302, {"Location": "http://example.invalid/six/"}, b"")
        ih.routes["/simple/idna/"] = (302, {"Location": "file:///etc/passwd"}, b"")
        monkeypatch.setenv(indexclient.INDEX_ENV, index + "/simple/")
        with pytest.raises(fetch.IndexUnavailable, match="not followed"):
            fetch.sdist_sha256("six", "==1.17.0")
        with pytest.raises(fetch.IndexUnavailable):
            fetch.sdist_sha256("idna", "==1.17.0")


def test_a_reuse_run_over_a_deep_index_page_runs_the_job_afresh(tmp_path, monkeypatch, caplog):
    """#46, acceptance 2: the earlier result is fine, the index's page for it is 200,000 deep:
    the run completes, that job runs, the problem is one line."""
    import logging

    from harness.job.runner import run_plan
    from tests.unit.job.test_runner import PREPARED, FakeBackend, FakeSteps
    from tests.unit.reuse.test_reuse import _earlier, _jobs

    (job,) = _jobs('{name: six, version: "==1.17.0"}')
    earlier = _earlier(tmp_path, job)
    with _server() as (url, h):
        h.routes["/simple/six/"] = (200, {}, b"[" * 200_000 + b"]" * 200_000)
        monkeypatch.setenv(indexclient.INDEX_ENV, url + "/simple/")
        steps = FakeSteps()
        with caplog.at_level(logging.INFO, logger="harness.reuse.reuse"):
            summary = run_plan(
                [job],
                out=tmp_path / "out",
                backend=FakeBackend(),
                prepared=PREPARED,
                run_one=steps,
                reuse_from=[earlier],
            )
    assert summary.ran == [job.job_id] and summary.reused == []
    lines = [r.getMessage() for r in caplog.records if r.name == "harness.reuse.reuse"]
    assert lines == [
        f"{job.job_id}: runs (the index's sdist could not be checked (the index's page for six: "
        f"{url}/simple/six/: the page is nested too deeply))"
    ]
