"""A host of a hostile package's own (#56): an HTTPS file server in a container on docker's
default bridge, the network the jobs' install steps use, serving sdists the test writes.

Its certificate is made for its address by the test and added to a CA bundle (the host's, plus
it) that the jobs' containers are given through ``FT_HARNESS_CA_BUNDLE``: so pip in a job takes
a ``name @ https://<its address>/...`` requirement as it would from any public host. Traffic
goes only between containers of this docker engine and the host."""

from __future__ import annotations

import contextlib
import io
import ssl
import subprocess
import tarfile
import time
import urllib.request
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
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory='/srv/files')
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
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@contextlib.contextmanager
def evil_host(tmp: Path, files: dict[str, bytes]) -> Iterator[tuple[str, Path]]:
    """(its base URL, a CA bundle that trusts it) while it serves ``files`` (name -> bytes)."""
    client = images.docker_client()
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
        network_mode="bridge",
        user="65534:65534",
        volumes={str(srv): {"bind": "/srv", "mode": "ro"}},
        labels={"ft-harness": "test-evil-host"},
    )
    try:
        container.reload()
        ip = container.attrs["NetworkSettings"]["IPAddress"]
        key, cert = srv / "tls" / "key.pem", srv / "tls" / "cert.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert)]
            + ["-days", "2", "-subj", "/CN=ft-harness evil host", "-addext", f"subjectAltName=IP:{ip}"],
            check=True,
            capture_output=True,
        )
        for p in (srv, srv / "tls", srv / "files", key, cert, *(srv / "files").iterdir()):
            p.chmod(0o755 if p.is_dir() else 0o644)
        (srv / "tls" / "ready").write_text("")
        bundle = tmp / "ca-bundle.pem"
        bundle.write_bytes(HOST_CA.read_bytes() + b"\n" + cert.read_bytes())
        url = f"https://{ip}:{PORT}"
        first = next(iter(files))
        ctx = ssl.create_default_context(cafile=str(bundle))
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"{url}/{first}", context=ctx, timeout=5) as r:
                    if r.read() == files[first]:
                        break
            except OSError:
                time.sleep(0.3)
        else:
            raise RuntimeError(f"the evil host did not serve: {container.logs()[-2000:]!r}")
        yield url, bundle
    finally:
        container.remove(force=True)
