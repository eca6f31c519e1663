"""The low items of #46 that live in this branch's files, one test each: the harness's own
failure log written through the workspace handle (never through a planted link), and the probe's
package metadata capped before it is copied into every result and report.  (The index's
redirects: tests/unit/job/test_index_page.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.backends import Prepared
from harness.core.evidence import Probe
from harness.job.runner import HARNESS_BUG_LOG, bug_result

from .test_runner import INFO, make_jobs


def test_the_harness_error_log_is_not_written_through_a_planted_link(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (job,) = make_jobs(1)
    elsewhere = tmp_path / "host-dir"
    elsewhere.mkdir()
    ws = out / "work" / job.job_id
    ws.mkdir(parents=True)
    (ws / "logs").symlink_to(elsewhere)  # package code left a link where the log goes
    res = bug_result(job, "k", Prepared(info=INFO, python="/x", cache_hit=True), "local", ValueError("boom"), out)
    assert list(elsewhere.iterdir()) == []  # not through the link: the link replaced by a dir
    assert not (ws / "logs").is_symlink()
    assert "ValueError: boom" in (ws / "logs" / HARNESS_BUG_LOG).read_text()
    assert f"work/{job.job_id}/logs/{HARNESS_BUG_LOG}" in res.findings[0].message


def test_probe_metadata_is_capped() -> None:
    huge = {
        "summary": "s" * 10**6,
        "home_page": "h" * 10**6,
        "project_urls": {f"k{i}" + "x" * 5000: "u" * 10**5 for i in range(10_000)},
    }
    p = Probe.from_dict({"dist": "x", "metadata": huge})
    assert len(p.metadata["summary"]) == 2000 and len(p.metadata["home_page"]) == 2000
    urls = p.metadata["project_urls"]
    assert len(urls) == 50 and all(len(k) <= 2000 and len(v) <= 2000 for k, v in urls.items())
    small = {"summary": "a parser", "project_urls": {"Source": "https://example.org"}}
    assert Probe.from_dict({"metadata": small}).metadata == small


def test_a_recipe_cannot_switch_off_the_harness_s_own_plugins(tmp_path: Path) -> None:
    """marisa-trie's shipped recipe says `python -m pytest tests/ -p no:run-parallel`: its threaded
    runs failed on an unknown option.  Now the option is not applied, and the result says why."""
    from harness.testsetup import recipeapply, registry

    src = tmp_path / "marisa-trie-1.3.1"
    (src / "tests").mkdir(parents=True)
    got = recipeapply.apply(registry.load().get("marisa-trie"), src, "marisa-trie", "3.13", registry="laruche")
    assert got.tests == "tests" and "no:run-parallel" not in " ".join(got.pytest_args)
    assert "-p no:run-parallel: switches off a plugin of the harness's own; not applied" in got.not_held
    for plugin in ("no:timeout", "no:pytest_run_parallel.plugin", "no:ft_harness_watchdog", "no:faulthandler"):
        rec = registry.Recipe(
            name="x", test_command=f"pytest tests -p {plugin} -p no:randomly", test_framework="pytest"
        )
        got = recipeapply.apply(rec, src, "x", "3.13", registry="r")
        assert got.pytest_args == ("-p", "no:randomly"), plugin


def test_the_shared_steps_env_is_the_harness_s_alone() -> None:
    """The tools layer and a stored wheel are keyed without the package's env: one package's
    PIP_INDEX_URL or CFLAGS must not shape what every later job copies in."""
    from harness.config import matrix, plan
    from harness.job.context import base_env
    from harness.job.wheelsteps import shared_env

    spec = matrix.loads(
        'interpreters: [{name: cpython3.13t, version: "3.13.5", source: "debian:trixie"}]\n'
        "packages: [{name: six, env: {PIP_INDEX_URL: 'https://evil.example/simple', "
        "CFLAGS: '-O0', PYTHONFAULTHANDLER: '0'}}]\n"
    )
    (job,) = plan.make_plan(spec)
    env = {**base_env(job), "PIP_CACHE_DIR": "/cache/pip"}
    shared = shared_env(env, job.package.env)
    assert "PIP_INDEX_URL" not in shared and "CFLAGS" not in shared and "PIP_CACHE_DIR" not in shared
    assert shared["PYTHONFAULTHANDLER"] == "1"  # the harness's own value stays
    assert env["PIP_INDEX_URL"] == "https://evil.example/simple"  # the package's own steps keep it


def _narrowed_attrs(tmp_path: Path):
    """The real attrs result of run0 (compatible; tests/data/report), with the test setup a
    registry of one's own gives it on the real attrs 26.1.0 sdist's files (tests/data/infer): a
    recipe whose options leave tests out, one of them with markup in it."""
    import dataclasses
    import json
    import shutil

    from harness.config import matrix, plan
    from harness.core.model import InterpreterInfo
    from harness.testsetup.suitesetup import read_suite
    from tests.conftest import INTERP_YAML
    from tests.data.report.shared import load

    src = Path(shutil.copytree(Path(__file__).parents[2] / "data" / "infer" / "attrs-26.1.0", tmp_path / "attrs"))
    (src / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    reg = tmp_path / "mine.json"
    reg.write_text(
        json.dumps(
            {
                "name": "mine",
                "commit_date": "2027-01-02",
                "packages": {
                    "attrs": {
                        "test_command": "python -m pytest tests -k 'not test_slots and <b>x</b>' -m 'not slow' "
                        "--deselect tests/test_x.py::test_x --ignore=tests/test_funcs.py -p no:randomly "
                        "-o addopts="
                    }
                },
            }
        )
    )
    (job,) = plan.make_plan(matrix.loads(INTERP_YAML + f"settings: {{registry: {reg}}}\npackages: [{{name: attrs}}]\n"))
    setup = read_suite(
        src, job.package, job.settings, InterpreterInfo(name="t", version="3.13.5", key="k")
    ).at_source.record
    attrs = next(r for r in load("run0") if r.job_id == "cp313t--attrs")
    assert attrs.verdict == "compatible" and not attrs.findings
    return dataclasses.replace(attrs, test_setup=setup)


NARROWED = (
    "The recipe (mine 2027-01-02) narrowed the tests: -k 'not test_slots and <b>x</b>' "
    "-m 'not slow' --deselect=tests/test_x.py::test_x --ignore=tests/test_funcs.py; "
    "the tests it leaves out did not run."
)


def test_a_recipe_s_narrowing_is_shown_on_the_package_page_and_in_report_md(tmp_path: Path) -> None:
    """A community recipe's -k/-m/--deselect/--ignore leave tests out of every run (a recipe can
    leave out the very test that fails): the package page, where it says what ran, and report.md
    say which, as the recipe's, its text escaped (-p/-o are not about which tests ran)."""
    import dataclasses

    from markupsafe import escape

    from harness import render
    from harness.render import markdown
    from harness.render.findings import recipe_narrowing
    from harness.results import aggregate

    res = _narrowed_attrs(tmp_path)
    assert res.test_setup.pytest_args_from == "recipe"
    assert recipe_narrowing(res.test_setup) == NARROWED
    rep = aggregate.build_report([res], meta={})
    render.write_all(rep, tmp_path / "out")
    page = (tmp_path / "out" / "site" / "pkg" / "cp313t--attrs.html").read_text()
    ran = page.split('<p class="ran">')[1]
    assert ran.split("</p>")[1].strip() == f'<p class="ran narrowed"><strong>{escape(NARROWED)}</strong>'
    assert "<b>x</b>" not in page
    md = markdown.render(rep)
    row = next(line for line in md.splitlines() if line.startswith("| attrs | 25.3.0 | cp313t |"))
    assert markdown.text(NARROWED) in row and "<b>" not in md  # a compatible job: no details below
    # matrix.yaml's pytest_args replace the recipe's: nothing of it narrowed the runs
    mine = dataclasses.replace(res.test_setup, pytest_args=("-x",), pytest_args_from="matrix.yaml")
    assert recipe_narrowing(mine) == "" and recipe_narrowing(None) == ""


def test_a_recipe_s_narrowing_is_said_under_a_job_with_findings(tmp_path: Path) -> None:
    """Where report.md says what ran (a job with findings), the narrowing follows it."""
    import dataclasses

    from harness.core.model import Finding
    from harness.render import markdown
    from harness.results import aggregate

    res = _narrowed_attrs(tmp_path)
    race = Finding(kind="ft-race", test_id="tests/test_x.py::test_y", modes=(0,), message="failed in threads")
    res = dataclasses.replace(res, verdict="ft-race", findings=(race,))
    md = markdown.render(aggregate.build_report([res], meta={}))
    details = md.split("### ")[1]
    assert details.index("With the GIL off:") < details.index(f"**{markdown.text(NARROWED)}**")


def test_the_pip_cache_volume_is_one_release_s() -> None:
    """#46: the docker backend's pip cache was one volume per job (package on interpreter), so one
    release's build could plant wheels that another release's install then used.  Now one per
    job and release; a step before the host knows the release gets none."""
    from harness.backends.base import Workspace
    from harness.backends.docker import DockerBackend, pip_cache_volume

    job = "cpython3.13t--six"
    names = {v: pip_cache_volume(job, v) for v in ("1.16.0", "1.17.0", "1.0+local.1", "1!1.0", "1.0", "local")}
    assert names["1.17.0"] == "ft-harness-pip-cpython3.13t--six--1.17.0"
    assert names["1.0+local.1"] == "ft-harness-pip-cpython3.13t--six--1.0_2blocal.1"
    assert names["1!1.0"] == "ft-harness-pip-cpython3.13t--six--1_211.0"
    assert len(set(names.values())) == len(names)
    backend = DockerBackend(image="img", run_id="r", cpus=1, client=object())  # reproduce lines only

    def line(release: str) -> str:
        ws = Workspace(host_root=Path("/o/work") / job, root="/work", python="/py", image="img", release=release)
        return backend.reproduce_command(ws, "pip install six", network=True)

    assert f"-v {names['1.16.0']}:/cache/pip" in line("1.16.0") and names["1.17.0"] not in line("1.16.0")
    assert "/cache/pip" not in line("") and "-e PIP_NO_CACHE_DIR=1" in line("")


def test_each_step_of_a_job_knows_the_release_it_caches_for(tmp_path: Path, monkeypatch) -> None:
    """The release a job's network steps see (Workspace.release): a local tree's "local"; the
    index's version once the host fetched the sdist; when pip fetched it (the host could not read
    the index) only what the spec pins, never the name of a file in the workspace."""
    import hashlib
    import tarfile
    from dataclasses import dataclass, field

    from harness.job import fetch
    from tests.unit.job.test_job_stages import CAPTURED, PACKAGES, FakeBackend, go, make_job, pypi_job

    @dataclass
    class Seen(FakeBackend):
        releases: dict[str, str] = field(default_factory=dict)

        def run(self, ws, argv, **kw):  # noqa: ANN001, ANN003, ANN202
            if kw["network"]:
                self.releases[kw["log"].stem] = ws.release
            return super().run(ws, argv, **kw)

    def tarball(dest: Path, version: str) -> Path:
        dest.mkdir(parents=True, exist_ok=True)
        path = dest / f"ft_clean-{version}.tar.gz"
        with tarfile.open(path, "w:gz") as tar:
            tar.add(PACKAGES / "ft_clean", arcname=f"ft_clean-{version}")
        return path

    def from_index(name: str, spec: str, dest: Path) -> fetch.Fetched:
        path = tarball(dest, "1.0")
        data = path.read_bytes()
        return fetch.Fetched(
            version="1.0",
            path=path,
            url="https://example.invalid/ft_clean-1.0.tar.gz",
            sha256=hashlib.sha256(data).hexdigest(),
            size=len(data),
        )

    def unreadable(name: str, spec: str, dest: Path) -> fetch.Fetched:
        raise fetch.IndexUnavailable("the index's page for ft_clean: timed out")

    local = Seen(captured=CAPTURED / "ft_clean")
    go(make_job(PACKAGES / "ft_clean"), local, tmp_path / "local")
    assert local.releases == {"install": "local"}
    monkeypatch.setattr(fetch, "sdist", from_index)
    for spec in ("==1.0", ">=0.1"):  # pinned or not, the index named the release
        seen = Seen(captured=CAPTURED / "ft_clean")
        go(pypi_job("ft_clean", spec), seen, tmp_path / f"index{spec}")
        assert seen.releases == {"install": "1.0"}, spec
    monkeypatch.setattr(fetch, "sdist", unreadable)
    for spec, release in (("==1.0", "1.0"), (">=0.1", "")):  # pip fetches: a file any name can have
        seen = Seen(captured=CAPTURED / "ft_clean", effects={"fetch": lambda root: tarball(root / "sdist", "1.0")})
        go(pypi_job("ft_clean", spec), seen, tmp_path / f"pip{spec}")
        assert seen.releases == {"fetch": release, "install": release}, spec


def test_no_package_of_the_public_index_runs_on_the_local_backend_in_the_tests(tmp_path: Path) -> None:
    """#46: ci.yml's tests ran iniconfig's and propcache's sdists with --backend local, their
    builds and tests unisolated on the runner.  The tests' CLI runner refuses that: a package
    without a path on the public index runs on docker; our own fixtures (a path, or an index on
    this machine) may run locally."""
    from _pytest.outcomes import Failed

    from tests.conftest import FIXTURES, INTERP_YAML, cli, pypi_on_local

    m = tmp_path / "matrix.yaml"
    m.write_text(
        INTERP_YAML + f"packages:\n  - {{name: iniconfig, version: '==2.3.1'}}\n"
        f"  - {{name: ft_clean, path: {FIXTURES / 'ft_clean'}}}\n  - {{top: 3, from: names.txt}}\n"
    )
    run = ("run", "--matrix", str(m), "--out", str(tmp_path / "out"))
    assert pypi_on_local((*run, "--backend", "local"), {}) == ["iniconfig", "{'top': 3, 'from': 'names.txt'}"]
    with pytest.raises(Failed, match="iniconfig.*use --backend docker"):
        cli(*run, "--backend", "local")
    assert pypi_on_local((*run, "--backend", "docker"), {}) == []
    assert pypi_on_local((*run, "--backend", "local"), {"FT_HARNESS_INDEX_URL": "http://127.0.0.1:8080/simple/"}) == []
    assert pypi_on_local(("plan", "--matrix", str(m), "--backend", "local"), {}) == []
    fixtures = tmp_path / "fixtures.yaml"
    fixtures.write_text(INTERP_YAML + f"packages: [{{name: ft_clean, path: {FIXTURES / 'ft_clean'}}}]\n")
    assert pypi_on_local(("run", "--matrix", str(fixtures), "--backend", "local"), {}) == []
