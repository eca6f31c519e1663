"""A package index on the loopback interface (PEP 691 JSON pages at ``/simple/<name>/``, and
files at ``/files/<file>``), for the store's provenance check and a store step's real pip: a real
HTTP server the harness's own index client reads (``FT_HARNESS_INDEX_URL``)."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from collections.abc import Callable
from typing import Any

from harness.job import wheelsteps
from harness.store.wheelstore import Sdist


class LoopIndex:
    """``pages[project]``: the files its page lists; ``fallback(project)``: the files of a project
    not in ``pages`` (None: 404)."""

    def __init__(self, fallback: Callable[[str], list[dict[str, Any]] | None] = lambda name: None) -> None:
        self.pages: dict[str, list[dict[str, Any]]] = {}
        self.files: dict[str, bytes] = {}  # served at /files/<name>
        self.fallback = fallback
        self.asked: list[str] = []
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                parts = self.path.strip("/").split("/")
                name = parts[-1]
                if parts[0] == "files" and name in index.files:
                    body, ctype = index.files[name], "application/octet-stream"
                else:
                    index.asked.append(name)
                    files = index.pages.get(name)
                    files = index.fallback(name) if files is None else files
                    if files is None:
                        self.send_error(404)
                        return
                    body = json.dumps({"meta": {"api-version": "1.0"}, "name": name, "files": files}).encode()
                    ctype = "application/vnd.pypi.simple.v1+json"
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/simple/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def serve(self, project: str, filename: str, data: bytes) -> None:
        """``data`` as ``filename``, listed on ``project``'s page with its sha256."""
        self.files[filename] = data
        self.pages.setdefault(project, []).append(
            {
                "filename": filename,
                "url": f"{self.url.removesuffix('/simple/')}/files/{filename}",
                "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                "requires-python": None,
                "yanked": False,
            }
        )

    def vouch(self, *sdists: Sdist, url: str = "") -> None:
        """List each sdist on its project's page, with its sha256 (the index's own file)."""
        for sd in sdists:
            self.pages.setdefault(sd.name, []).append(file_entry(sd, url))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        wheelsteps._PAGES.clear()  # the run's memo of pages: this index is gone


def file_entry(sd: Sdist, url: str = "") -> dict[str, Any]:
    return {
        "filename": f"{sd.name}-{sd.version}.tar.gz",
        "url": url or sd.url,
        "hashes": {"sha256": sd.sha256},
        "requires-python": None,
        "yanked": False,
    }
