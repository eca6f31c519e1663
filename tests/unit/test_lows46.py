"""The low items of #46 that live in this branch's files, one test each: the harness's own
failure log written through the workspace handle (never through a planted link), and the probe's
package metadata capped before it is copied into every result and report.  (The index's
redirects: tests/unit/test_index_page.py.)"""

from __future__ import annotations

from pathlib import Path

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
    res = bug_result(job, "k", Prepared(info=INFO, python="/x", cache_hit=True), "local",
                     ValueError("boom"), out)
    assert list(elsewhere.iterdir()) == []  # not through the link: the link replaced by a dir
    assert not (ws / "logs").is_symlink()
    assert "ValueError: boom" in (ws / "logs" / HARNESS_BUG_LOG).read_text()
    assert f"work/{job.job_id}/logs/{HARNESS_BUG_LOG}" in res.findings[0].message


def test_probe_metadata_is_capped() -> None:
    huge = {"summary": "s" * 10**6, "home_page": "h" * 10**6,
            "project_urls": {f"k{i}" + "x" * 5000: "u" * 10**5 for i in range(10_000)}}
    p = Probe.from_dict({"dist": "x", "metadata": huge})
    assert len(p.metadata["summary"]) == 2000 and len(p.metadata["home_page"]) == 2000
    urls = p.metadata["project_urls"]
    assert len(urls) == 50 and all(len(k) <= 2000 and len(v) <= 2000 for k, v in urls.items())
    small = {"summary": "a parser", "project_urls": {"Source": "https://example.org"}}
    assert Probe.from_dict({"metadata": small}).metadata == small


def test_a_recipe_cannot_switch_off_the_harness_s_own_plugins(tmp_path: Path) -> None:
    """marisa-trie's shipped recipe says `python -m pytest tests/ -p no:run-parallel`: its threaded
    runs failed on an unknown option.  Now the option is not applied, and the result says why."""
    from harness.testsetup import registry

    src = tmp_path / "marisa-trie-1.3.1"
    (src / "tests").mkdir(parents=True)
    got = registry.apply(registry.load().get("marisa-trie"), src, "marisa-trie", "3.13", registry="laruche")
    assert got.tests == "tests" and "no:run-parallel" not in " ".join(got.pytest_args)
    assert "-p no:run-parallel: switches off a plugin of the harness's own; not applied" in got.not_held
    for plugin in ("no:timeout", "no:pytest_run_parallel.plugin", "no:ft_harness_watchdog", "no:faulthandler"):
        rec = registry.Recipe(name="x", test_command=f"pytest tests -p {plugin} -p no:randomly", test_framework="pytest")
        got = registry.apply(rec, src, "x", "3.13", registry="r")
        assert got.pytest_args == ("-p", "no:randomly"), plugin



def test_the_shared_steps_env_is_the_harness_s_alone() -> None:
    """The tools layer and a stored wheel are keyed without the package's env: one package's
    PIP_INDEX_URL or CFLAGS must not shape what every later job copies in."""
    from harness.config import matrix, plan
    from harness.job.context import base_env
    from harness.job.wheelsteps import shared_env

    spec = matrix.loads('interpreters: [{name: cpython3.13t, version: "3.13.5", source: "debian:trixie"}]\n'
                        "packages: [{name: six, env: {PIP_INDEX_URL: 'https://evil.example/simple', "
                        "CFLAGS: '-O0', PYTHONFAULTHANDLER: '0'}}]\n")
    (job,) = plan.make_plan(spec)
    env = {**base_env(job), "PIP_CACHE_DIR": "/cache/pip"}
    shared = shared_env(env, job.package.env)
    assert "PIP_INDEX_URL" not in shared and "CFLAGS" not in shared and "PIP_CACHE_DIR" not in shared
    assert shared["PYTHONFAULTHANDLER"] == "1"  # the harness's own value stays
    assert env["PIP_INDEX_URL"] == "https://evil.example/simple"  # the package's own steps keep it
