"""The matrix loader: defaults, every key, and errors that carry their line."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import matrix
from harness.core.errors import ConfigError

GOOD = """\
settings:
  threads: 8
  repeat: 5
  install_timeout: 3600
  gil_modes: [0]
interpreters:
  - name: ft
    version: "3.13.5"
    source: "debian:trixie"
    configure: [--with-lto]
  - name: ft-tsan
    version: "3.13.5"
    source: debian:trixie
    sanitizer: thread
packages:
  - name: six
    version: "1.17.0"
  - name: idna
    version: ">=3.7,<4"
    tests: tests
    test_requires: ["pytest-mock>=3"]
    pytest_args: ["-x"]
    env: {FOO: "1"}
    skip:
      - {test: "tests/test_idna.py::test_slow", reason: "needs network"}
      - {test: "slow", reason: "takes minutes"}
    notes: "fine"
    links: ["https://example.org/issue/1"]
  - name: mine
    path: src
"""


def load(text: str, tmp_path: Path) -> matrix.MatrixSpec:
    (tmp_path / "src").mkdir(exist_ok=True)
    f = tmp_path / "matrix.yaml"
    f.write_text(text)
    return matrix.load(f)


def test_good_matrix(tmp_path: Path) -> None:
    spec = load(GOOD, tmp_path)
    assert spec.settings.threads == 8 and spec.settings.iterations == 5  # default kept
    assert spec.settings.gil_modes == (0,)
    assert spec.settings.install_timeout == 3600 and spec.settings.job_timeout == 1800
    ft, tsan = spec.interpreters
    assert ft.configure_flags == ("--disable-gil", "--with-lto")
    assert tsan.configure_flags == ("--disable-gil", "--with-thread-sanitizer")
    assert ft.source == matrix.Source(kind="debian", suite="trixie")
    six, idna, mine = spec.packages
    assert six.version == "==1.17.0"  # a bare version means exactly that version
    assert idna.skip[1] == matrix.Skip(test="slow", reason="takes minutes")
    assert idna.env == (("FOO", "1"),)
    assert mine.is_local and mine.path == str((tmp_path / "src").resolve())
    assert len(spec.digest) == 16


def test_digest_changes_with_content(tmp_path: Path) -> None:
    a = load(GOOD, tmp_path).digest
    b = load(GOOD.replace("threads: 8", "threads: 2"), tmp_path).digest
    assert a != b


def test_defaults() -> None:
    spec = matrix.loads(
        'interpreters: [{name: a, version: "3.13.5", source: "debian:trixie"}]\npackages: [{name: six}]\n'
    )
    assert spec.settings == matrix.Settings()
    assert spec.settings.gil_modes == (0, 1) and spec.settings.repeat == 4 and spec.settings.confirm == 20


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("interpreters: []\npackages: [{name: a}]\n", 1, "interpreters must list at least one entry"),
        ('interpreters: [{name: a, version: "3.13.5"}]\npackages: [{name: a}]\n', 1, "interpreters[0] needs 'source'"),
        (
            'interpreters: [{name: a, version: "three", source: "debian:trixie"}]\npackages: [{name: a}]\n',
            1,
            "interpreters[0].version must be a CPython version",
        ),
        (
            'interpreters: [{name: a, version: "3.13.5", source: "debian:Trixie 13"}]\npackages: [{name: a}]\n',
            1,
            "interpreters[0].source debian suite 'Trixie 13' is not a Debian suite name",
        ),
        (
            'interpreters:\n  - {name: a, version: "3.14", source: {url: "https://x.org/P.tgz", sha256: "'
            + "a" * 64
            + '"}}\npackages: [{name: a}]\n',
            2,
            "interpreters[0].version must name a release to build, like 3.14.0, got '3.14'",
        ),
        (
            'interpreters:\n  - name: a\n    source: "debian:forky"\npackages: [{name: a}]\n',
            2,
            "interpreters[0] needs 'version' (the CPython version debian:forky builds)",
        ),
        (
            'interpreters:\n  - name: a\n    source: "python:python3.14t"\n    sanitizer: thread\n'
            "packages: [{name: a}]\n",
            4,
            "interpreters[0].sanitizer needs a source the harness builds",
        ),
        (
            'interpreters:\n  - name: a\n    source: "python:./nope/python3.14t"\npackages: [{name: a}]\n',
            3,
            "interpreters[0].source names './nope/python3.14t', which does not exist",
        ),
        (
            'interpreters:\n  - name: a\n    source: "pyhton:python3.14t"\npackages: [{name: a}]\n',
            3,
            "interpreters[0].source must be 'debian:SUITE', 'tarball:PATH', 'python:PATH_OR_NAME'",
        ),
        (
            'interpreters:\n  - {name: a, version: "3.13.5", source: "debian:trixie"}\n'
            '  - {name: a, version: "3.13.5", source: "debian:trixie"}\npackages: [{name: a}]\n',
            3,
            "interpreters[1].name 'a' repeats interpreters[0]",
        ),
        (
            'settings:\n  repeat: true\ninterpreters: [{name: a, version: "3.13.5", source: "debian:trixie"}]\n'
            "packages: [{name: a}]\n",
            2,
            "settings.repeat must be a positive integer, got True",
        ),
        (
            'settings:\n  install_timeout: 0\ninterpreters: [{name: a, version: "3.13.5", source: "debian:trixie"}]\n'
            "packages: [{name: a}]\n",
            2,
            "settings.install_timeout must be a positive integer, got 0",
        ),
    ],
)
def test_errors_carry_line(text: str, line: int, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        matrix.loads(text, file="m.yaml")
    assert e.value.line == line
    assert str(e.value).startswith(f"m.yaml:{line}: {message}")


def test_url_source_needs_hex_sha(tmp_path: Path) -> None:
    text = (
        'interpreters:\n  - name: a\n    version: "3.14.0"\n    source:\n'
        '      url: https://example.org/Python-3.14.0.tar.xz\n      sha256: "abc"\npackages: [{name: a}]\n'
    )
    with pytest.raises(ConfigError, match=r"^m.yaml:6: interpreters\[0\].source.sha256 must be 64 hex"):
        matrix.loads(text, file="m.yaml")
    good = text.replace('"abc"', '"' + "a" * 64 + '"')
    src = matrix.loads(good).interpreters[0].source
    assert src.kind == "url" and src.sha256 == "a" * 64


def test_fallback_wheel_setting() -> None:
    head = 'interpreters: [{name: ft, version: "3.13.5", source: "debian:trixie"}]\n'
    assert matrix.loads(head + "packages: [{name: a}]\n").settings.fallback_wheel == "build"
    kept = matrix.loads(head + "settings: {fallback_wheel: keep}\npackages: [{name: a}]\n")
    assert kept.settings.fallback_wheel == "keep"
    with pytest.raises(ConfigError) as e:
        matrix.loads(head + "settings:\n  fallback_wheel: kept\npackages: [{name: a}]\n", file="m.yaml")
    assert str(e.value) == (
        "m.yaml:3: settings.fallback_wheel must be one of build, keep, got 'kept' (did you mean 'keep'?)"
    )
    with pytest.raises(ConfigError, match=r"^m.yaml:3: packages\[0\].runner must be one of pytest, tox, got 'tx'"):
        matrix.loads(head + "packages:\n  - {name: a, runner: tx, tox_env: py}\n", file="m.yaml")
