"""docker's own log read as a stream up to log_bytes (issue #29): package code that floods PID 1's
stdout (what the shell's redirect does not catch) costs the host at most the limit."""

from __future__ import annotations

import pytest

from tests.integration.conftest import DOCKER
from tests.integration.test_docker_backend import backend, image, run_py, ws  # noqa: F401 - fixtures

pytestmark = DOCKER


def test_a_flood_on_pid1s_stdout_is_cut_at_the_limit(backend, ws, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("FT_HARNESS_LIMIT_LOG_BYTES", str(1 << 20))
    code = (
        "import os\nfd = os.open('/proc/1/fd/1', os.O_WRONLY)\n"
        "for _ in range(4 * 1024):\n    os.write(fd, b'z' * 1023 + b'\\n')\nprint('own output')"
    )
    ws.host("logs").mkdir(exist_ok=True)  # as job._run makes them before the command
    ws.host("logs", "step.log").write_text("")
    res, out = run_py(backend, ws, code, timeout=120)
    assert res.exit_code == 0, out[-2000:]
    assert "own output" in out
    assert "[ft-harness] log cut: the rest not read (limit log_bytes (1048576) exceeded" in out
    assert len(out) < (1 << 20) + 4096
