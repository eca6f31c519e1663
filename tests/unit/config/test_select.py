"""The {top: N} selector, on PEP 691 responses recorded from pypi.org (tests/data/index/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config import matrix, select
from harness.config.matrix import Package, Selector
from harness.core.errors import ConfigError

INDEX = Path(__file__).resolve().parents[2] / "data" / "index"
TOP30 = [
    "boto3",
    "packaging",
    "setuptools",
    "urllib3",
    "certifi",
    "typing-extensions",
    "requests",
    "charset-normalizer",
    "idna",
    "botocore",
    "aiobotocore",
    "python-dateutil",
    "cryptography",
    "six",
    "numpy",
    "cffi",
    "pyyaml",
    "grpcio-status",
    "pycparser",
    "pydantic",
    "pluggy",
    "s3transfer",
    "pygments",
    "click",
    "attrs",
    "protobuf",
    "pydantic-core",
    "anyio",
    "fsspec",
    "pandas",
]
HEAD = 'interpreters: [{name: a, version: "3.13.5", source: "debian:trixie"}]\npackages:\n'


class Recorded:
    """A fetch that serves the recorded pages and counts what it was asked."""

    def __init__(self):
        self.asked: list[str] = []

    def __call__(self, name: str) -> dict:
        self.asked.append(name)
        path = INDEX / f"{name}.json"
        if not path.is_file():
            raise OSError(f"no recorded response for {name}")
        return json.loads(path.read_text())


def offline(name: str) -> dict:
    raise AssertionError(f"the network was asked for {name}")


def _spec(entries: str, tmp_path: Path | None = None) -> matrix.MatrixSpec:
    return matrix.loads(HEAD + entries, base=tmp_path)


def test_top_30_in_snapshot_order_versions_resolved_once():
    fetch = Recorded()
    pkgs, record = select.expand(_spec("  - {top: 30}\n"), fetch=fetch)
    assert [p.name for p in pkgs] == TOP30
    assert fetch.asked == TOP30  # one index page per project
    versions = {p.name: p.version for p in pkgs}
    assert versions["attrs"] == "==26.1.0"
    assert versions["six"] == "==1.17.0"
    assert versions["numpy"] == "==2.5.5"
    assert all(p.version.startswith("==") and not p.unresolved for p in pkgs)
    # certifi's newest release (a .post1) ships only a wheel: the newest with an sdist is tested
    certifi = next(p for p in pkgs if p.name == "certifi")
    assert certifi.version == "==2026.10.18"
    assert certifi.notes == "2026.10.19.post1 has no sdist; 2026.10.18 is the newest with one"
    # the record of the plan replays it without the network, through JSON
    again, _ = select.expand(
        _spec("  - {top: 30}\n"),
        fetch=offline,
        known=select.load_record(json.loads(json.dumps(select.dump_record(record)))),
    )
    assert again == pkgs


def test_extensions_only_and_exclude():
    fetch = Recorded()
    spec = _spec("  - {top: 4, extensions_only: true, exclude: [Cryptography]}\n")
    pkgs, record = select.expand(spec, fetch=fetch)
    # platform-specific wheels in the resolved release; boto3, packaging ... are none-any
    assert [(p.name, p.version) for p in pkgs] == [
        ("charset-normalizer", "==3.5.3"),
        ("numpy", "==2.5.5"),
        ("cffi", "==2.1.1"),
        ("pyyaml", "==6.0.4"),
    ]
    assert "cryptography" not in fetch.asked
    assert record["boto3"].extension is False and record["numpy"].extension is True


def test_explicit_entries_override_the_selected_ones(tmp_path):
    spec = _spec(
        "  - {top: 3}\n"
        "  - {name: Packaging, tests: tests, pytest_args: [--ignore=tests/property]}\n"
        "  - {name: boto3, version: '==1.40.0'}\n"
        "  - {name: mylocal, path: .}\n",
        tmp_path,
    )
    pkgs, _ = select.expand(spec, fetch=Recorded())
    assert [p.name for p in pkgs] == ["boto3", "Packaging", "setuptools", "mylocal"]
    assert pkgs[0].version == "==1.40.0"  # its own version, not resolved
    assert pkgs[1] == Package(
        name="Packaging", version="==26.4", tests="tests", pytest_args=("--ignore=tests/property",)
    )
    assert pkgs[3].is_local and pkgs[3].version == ""


def test_from_file_plain_list_and_json(tmp_path):
    (tmp_path / "names.txt").write_text("# mine\nSix\n\nattrs  # the classes one\nsix\nnope-x\n")
    (tmp_path / "top.json").write_text(
        json.dumps({"rows": [{"project": "idna", "download_count": 2}, {"project": "attrs"}]})
    )
    spec = _spec("  - {top: 5, from: names.txt}\n", tmp_path)
    assert spec.selectors == (Selector(top=5, source=str(tmp_path / "names.txt")),)
    pkgs, record = select.expand(spec, fetch=Recorded())
    assert [(p.name, p.version, p.unresolved) for p in pkgs] == [
        ("six", "==1.17.0", ""),
        ("attrs", "==26.1.0", ""),
        ("nope-x", "", "index: no recorded response for nope-x"),
    ]  # an outcome, not a crash
    assert record["nope-x"].error.startswith("index: ")
    pkgs, _ = select.expand(_spec("  - {top: 1, from: top.json}\n", tmp_path), fetch=Recorded())
    assert [p.name for p in pkgs] == ["idna"]


def test_the_shipped_snapshot():
    names = select.read_names()
    assert len(names) == 15000
    assert names[:3] == ["boto3", "packaging", "setuptools"]


def test_the_free_threaded_wheels_results_format(tmp_path):
    # the head of hugovk/free-threaded-wheels' results.json (2026-06-14), as the tracker writes it
    (tmp_path / "r.json").write_text(
        json.dumps(
            {
                "last_update": "Sunday, 14 June 2026",
                "data": [
                    {
                        "downloads": 1135248216,
                        "name": "charset-normalizer",
                        "css_class": "success",
                        "icon": "\U0001f9f5",
                        "free_threaded_wheel": True,
                    },
                    {"downloads": 1100000000, "name": "cryptography", "free_threaded_wheel": True},
                    {"downloads": 900000000, "name": "PyYAML", "free_threaded_wheel": True},
                ],
            }
        )
    )
    assert select.read_names(tmp_path / "r.json") == ["charset-normalizer", "cryptography", "pyyaml"]
    (tmp_path / "bad.json").write_text('{"data": [{"nom": "x"}]}')
    with pytest.raises(ConfigError, match=r"data\[\]\.name"):
        select.read_names(tmp_path / "bad.json")


def _page(*files: tuple[str, bool]) -> dict:
    return {"meta": {"api-version": "1.1"}, "name": "p", "files": [{"filename": f, "yanked": y} for f, y in files]}


@pytest.mark.parametrize(
    ("files", "version", "error"),
    [
        (
            [("p-2.0.tar.gz", "broken"), ("p-2.0-py3-none-any.whl", False), ("p-1.0.tar.gz", False)],
            "1.0",
            "",
        ),  # a yanked sdist (yanked carries the reason) does not count
        ([("p-3.0b1.tar.gz", False), ("p-2.0.tar.gz", False)], "2.0", ""),  # pre-releases ignored
        ([("p-1.0.tar.gz", True)], "", "no release on the index (all yanked or pre-releases)"),
        ([("p-1.0-py3-none-any.whl", False)], "", "no sdist for any release (newest: 1.0)"),
        ([("garbage.txt", False)], "", "no release on the index (all yanked or pre-releases)"),
    ],
)
def test_resolve_page(files, version, error):
    r = select.resolve_page("P", _page(*files))
    assert (r.name, r.version, r.error) == ("p", version, error)


def test_extension_is_read_from_the_resolved_release_only():
    r = select.resolve_page(
        "p",
        _page(
            ("p-2.0.tar.gz", False),
            ("p-2.0-py3-none-any.whl", False),
            ("p-1.0-cp313-cp313-manylinux_2_28_x86_64.whl", False),
        ),
    )
    assert (r.version, r.extension) == ("2.0", False)
    r = select.resolve_page("p", _page(("p-2.0.tar.gz", False)))
    assert r.extension is None  # no wheels: the index cannot tell
    r = select.resolve_page("p", _page(("p-2.0.tar.gz", False), ("p-2.0-py3-none-macosx_11_0_arm64.whl", False)))
    assert r.extension is True  # a platform wheel without an ABI (a bundled binary) counts


@pytest.mark.parametrize(
    ("entry", "msg"),
    [
        ("  - {top: x}\n", "matrix.yaml:3: packages[0].top must be a positive integer, got 'x'"),
        ("  - {top: 0}\n", "matrix.yaml:3: packages[0].top must be a positive integer, got 0"),
        (
            "  - name: six\n  - top: 3\n    extensions_only: 'yes'\n",
            "matrix.yaml:5: packages[1].extensions_only must be true or false, got 'yes'",
        ),
        ("  - {top: 3, exclude: six}\n", "matrix.yaml:3: packages[0].exclude must be a list, got 'six'"),
        (
            "  - {top: 3, from: missing.txt}\n",
            "matrix.yaml:3: packages[0].from names 'missing.txt', which does not exist",
        ),
        (
            "  - {top: 3, tests: t}\n",
            "matrix.yaml:3: packages[0].tests is a package setting; a "
            "selector {top: N} takes only top, from, extensions_only, "
            "exclude (give the package its own entry to override it)",
        ),
        ("  - {top: 3, exclud: [a]}\n", "matrix.yaml:3: unknown key 'exclud' in packages[0] (did you mean 'exclude'?)"),
    ],
)
def test_bad_selectors(tmp_path, entry, msg):
    with pytest.raises(ConfigError) as e:
        _spec(entry, tmp_path)
    assert str(e.value).startswith(msg)


def test_a_selector_changes_the_digest():
    assert _spec("  - {top: 3}\n").digest != _spec("  - {top: 4}\n").digest


def test_expand_spec_records_versions_once_and_every_shard_reads_them(tmp_path):
    # the plan resolves against recorded index responses and writes the record; a second
    # expansion (a shard, a rerun) reads the record and must not ask the index again
    import json as _json

    from harness.config import matrix as _matrix
    from harness.config import plan as _plan
    from harness.config import sharding as _sharding
    from harness.config.select import expand_spec

    spec = _matrix.loads(
        'interpreters: [{name: cp313t, version: "3.13.5", source: "debian:trixie"}]\n'
        "packages: [{top: 3}, {name: six, tests: tests}]\n"
    )
    record = tmp_path / "resolved.json"
    first = expand_spec(spec, record, fetch=Recorded())
    names = [p.name for p in first.packages]
    assert len(names) == 4 and names[-1] == "six" and not first.selectors
    assert all(p.version.startswith("==") for p in first.packages[:3])
    saved = _json.loads(record.read_text())
    assert {r["name"] for r in saved} >= set(names[:3])

    def no_network(name):
        raise AssertionError(f"asked the index for {name}")

    again = expand_spec(spec, record, fetch=no_network)
    assert again.packages == first.packages
    shards = [_sharding.shard(_plan.make_plan(again), i, 3) for i in (1, 2, 3)]
    assert sorted(j.job_id for s in shards for j in s) == sorted(j.job_id for j in _plan.make_plan(first))
