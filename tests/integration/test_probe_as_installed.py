"""The import probe runs on the package as a user installs it (issue #57, "the right word").

aiohttp 3.14.5 was published `gil-reenabled` because the harness had installed Brotli (its
`speedups` extra, in its test requirements) before the probe; a user's `pip install aiohttp`
does not re-enable the GIL. Now the probe runs right after the install of the package alone, and
again once the test dependencies are in: a module that re-enables the GIL only then is a note
(`gil_with_test_deps`), naming the extra it came through. ft_gilextra is aiohttp's shape (a pure
package that uses its extra's C extension when it is there); ft_gilslot's own module still
decides its verdict.
"""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, INTERP_YAML, cli, results

pytestmark = [pytest.mark.integration]

SPEEDUPS = f"ft_gilextra_speedups @ file://{FIXTURES / 'ft_gilextra_speedups'}"


def _matrix(tmp_path):
    m = tmp_path / "matrix.yaml"
    m.write_text(
        INTERP_YAML
        + "settings: {repeat: 1, iterations: 1, threads: 2, confirm: 0, gil_on: targeted}\n"
        + "packages:\n"
        + "".join(
            f"  - {{name: {n}, path: {FIXTURES / n}, test_requires: [pytest, {SPEEDUPS!r}]}}\n"
            for n in ("ft_gilextra", "ft_gilslot")
        )
    )
    return m


def test_an_extra_that_re_enables_the_gil_is_a_note_and_the_own_module_still_decides(tmp_path, ft_interpreter):
    r = cli("run", "--matrix", str(_matrix(tmp_path)), "--out", str(tmp_path / "out"), "--backend", "local")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    by = {d["package"]: d for d in results(tmp_path / "out").values()}

    extra = by["ft_gilextra"]
    names = [p["name"] for p in extra["phases"]]
    assert names.index("probe") < names.index("test-deps") < names.index("probe-test-deps"), names
    first, later = (next(p for p in extra["phases"] if p["name"] == n) for n in ("probe", "probe-test-deps"))
    assert first["probe"]["gil_enabled"] is False and first["probe"]["modules"] == []
    assert later["probe"]["modules"] == ["ft_gilextra_speedups._fast"]  # the test deps' install: it is there
    assert extra["verdict"] == "compatible", extra["findings"]
    assert not [f for f in extra["findings"] if f["kind"] == "gil-reenabled"]
    (note,) = extra["gil_with_test_deps"]
    assert note["module"] == "ft_gilextra_speedups._fast" and note["dist"] == "ft_gilextra_speedups"
    assert note["extra"] == "speedups"
    assert note["note"].startswith("with the `speedups` extra: ft_gilextra_speedups's `ft_gilextra_speedups._fast`")

    own = by["ft_gilslot"]
    assert own["verdict"] == "gil-reenabled", own["findings"]
    f = next(f for f in own["findings"] if f["kind"] == "gil-reenabled")
    assert f["module"] == "ft_gilslot._speedups" and f["phase"] == "probe"
    assert own["gil_with_test_deps"] == []  # its own module: seen by the first probe, not a note
