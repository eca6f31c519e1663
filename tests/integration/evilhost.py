"""A host of a hostile package's own (#56): an HTTPS file server named ``evil.test`` in a
container on a docker network the test makes, serving sdists the test writes.

The jobs' install steps join that network (``FT_HARNESS_DOCKER_NETWORK``: docker's DNS answers
``evil.test`` there, and the package index is reached as from docker's bridge), and trust its
certificate, made by the test for that name and added to a CA bundle (the host's, plus it) the
containers are given through ``FT_HARNESS_CA_BUNDLE``: so pip in a job takes a
``name @ https://evil.test:8443/...`` requirement as it would from any public host. (An address
as the host does not do: pip's TLS refuses an IP literal.) Traffic goes only between containers
of this docker engine and the host."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import socket
import ssl
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

from harness.backends.dockerconfig import HOST_CA
from harness.interpreters import images

PORT = 8443
SERVER = f"""
PORT = {PORT}
import functools, http.server, os, ssl, time
while not os.path.exists('/srv/tls/ready'):
    time.sleep(0.2)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain('/srv/tls/cert.pem', '/srv/tls/key.pem')
class Files(http.server.SimpleHTTPRequestHandler):
    def guess_type(self, path):  # bytes as they are: no Content-Encoding for a .tar.gz
        return 'application/octet-stream'
handler = functools.partial(Files, directory='/srv/files')
server = http.server.ThreadingHTTPServer(('0.0.0.0', PORT), handler)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"""


def sdist(name: str, version: str, module: str) -> bytes:
    """A setuptools sdist of one module ``name``.py with ``module`` as its text."""
    base = f"{name}-{version}"
    files = {
        f"{base}/pyproject.toml": (
            '[build-system]\nrequires = ["setuptools>=74"]\nbuild-backend = "setuptools.build_meta"\n\n'
            f'[project]\nname = "{name}"\nversion = "{version}"\n\n[tool.setuptools]\npy-modules = ["{name}"]\n'
        ),
        f"{base}/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{base}/{name}.py": module,
    }
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()  # the same bytes every time


NAME = "evil.test"


def _get(ip: str, path: str, bundle: Path) -> bytes:
    """GET https://evil.test:PORT/path from the host, connecting to ``ip`` (no DNS here)."""
    ctx = ssl.create_default_context(cafile=str(bundle))
    with socket.create_connection((ip, PORT), timeout=5) as raw, ctx.wrap_socket(raw, server_hostname=NAME) as tls:
        tls.sendall(f"GET /{path} HTTP/1.0\r\nHost: {NAME}\r\n\r\n".encode())
        data = b""
        while chunk := tls.recv(65536):
            data += chunk
    return data.partition(b"\r\n\r\n")[2]


@contextlib.contextmanager
def evil_host(tmp: Path, files: dict[str, bytes]) -> Iterator[tuple[str, dict[str, str]]]:
    """(its base URL, the env that lets the jobs reach and trust it) while it serves ``files``."""
    client = images.docker_client()
    network = client.networks.create(
        f"ft-harness-test-evil-{os.getpid()}", driver="bridge", labels={"ft-harness": "test"}
    )
    base = images.ensure_base(client, Path.home() / ".cache" / "ft-harness")
    srv = tmp / "evil-host"
    (srv / "files").mkdir(parents=True)
    (srv / "tls").mkdir()
    for name, data in files.items():
        (srv / "files" / name).write_bytes(data)
    container = client.containers.run(
        base.tag,
        ["python3", "-c", SERVER],
        detach=True,
        network=network.name,
        user="65534:65534",
        volumes={str(srv): {"bind": "/srv", "mode": "ro"}},
        labels={"ft-harness": "test-evil-host"},
    )
    try:
        network.disconnect(container)
        network.connect(container, aliases=[NAME])
        container.reload()
        ip = container.attrs["NetworkSettings"]["Networks"][network.name]["IPAddress"]
        key, cert = srv / "tls" / "key.pem", srv / "tls" / "cert.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert)]
            + ["-days", "2", "-subj", f"/CN={NAME}", "-addext", f"subjectAltName=DNS:{NAME}"],
            check=True,
            capture_output=True,
        )
        for p in (srv, srv / "tls", srv / "files", key, cert, *(srv / "files").iterdir()):
            p.chmod(0o755 if p.is_dir() else 0o644)
        (srv / "tls" / "ready").write_text("")
        bundle = tmp / "ca-bundle.pem"
        bundle.write_bytes(HOST_CA.read_bytes() + b"\n" + cert.read_bytes())
        first = next(iter(files))
        for _ in range(100):
            try:
                if _get(ip, first, bundle) == files[first]:
                    break
            except OSError:
                time.sleep(0.3)
        else:
            raise RuntimeError(f"the evil host did not serve: {container.logs()[-2000:]!r}")
        yield f"https://{NAME}:{PORT}", {"FT_HARNESS_CA_BUNDLE": str(bundle), "FT_HARNESS_DOCKER_NETWORK": network.name}
    finally:
        container.remove(force=True)
        network.remove()
