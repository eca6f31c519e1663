"""The recipe, the class and the fix of an upstream issue (harness.render.issuetext, issue #57).

``recipe_blocks``: the finding's laptop recipe (harness.job.laptoprecipe, or harness.render.
findings.laptop_recipe for a finding with none) as shell blocks a maintainer runs as written: the
exact interpreter; the setup (venv, the pinned tools, the sdist's tests); the test alone in a loop
of ``runs`` runs with the GIL off that stops at its first failure; the same with the GIL on; and
what each prints.  ``class_of``: whose bug it is, with the counts that say so; ``fix_for``: a
fix where one fits.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from ..core.model import Finding
from ..results.report import JobEntry
from .findings import laptop_recipe

_GIL = re.compile(r"^((?:[A-Z_][A-Z0-9_]*=\S+ )*)PYTHON_GIL=\S+ ")
RUN_OPTIONS = ("-n", "--numprocesses", "--dist", "--parallel-threads", "--iterations", "--timeout")
TEST_KINDS = ("ft-crash", "crash", "ft-race", "hang", "thread-unsafe")


def _with_gil(line: str, gil: int) -> str:
    """The recipe's test line with ``PYTHON_GIL=gil`` (added first when it has none)."""
    if _GIL.match(line):
        return _GIL.sub(lambda m: f"{m.group(1)}PYTHON_GIL={gil} ", line, count=1)
    return f"PYTHON_GIL={gil} {line}"


def loop(line: str, gil: int, runs: int) -> str:
    """A shell loop: ``line`` with the GIL mode ``gil`` up to ``runs`` times, stopping at the
    first failure; it prints ``failed on run I of N: reproduced`` or ``passed all N runs``."""
    return "\n".join(
        [
            f"for i in $(seq 1 {runs}); do",
            f'  if ! {_with_gil(line, gil)}; then echo "failed on run $i of {runs}: reproduced"; break; fi',
            f'  if [ "$i" -eq {runs} ]; then echo "passed all {runs} runs: not reproduced"; fi',
            "done",
        ]
    )


def _fence(text: str) -> str:
    return f"```sh\n{text.rstrip()}\n```"


def run_options(p: JobEntry, f: Finding) -> str:
    """The xdist, thread and timeout options of the run that showed ``f`` first."""
    ph = next((x for x in p.phases if x.name == f.phase), None)
    words = list(ph.command) if ph else []
    out: list[str] = []
    for i, w in enumerate(words):
        name = w.split("=", 1)[0]
        if name in RUN_OPTIONS:
            out += [w] if "=" in w or i + 1 >= len(words) else [w, words[i + 1]]
    return shlex.join(out)


def _interpreter(p: JobEntry, exe: str) -> list[str]:
    it = p.interpreter
    version = it.full_version or it.version
    return [
        f"# free-threaded CPython {version} as {exe} on PATH: one of",
        f"uv python install {version}+freethreaded   # puts {exe} in ~/.local/bin",
        f"# or CPython {version}'s source: ./configure --disable-gil && make && make install",
    ]


def _expected_failure(f: Finding, failure: str) -> str:
    e_lines = [ln for ln in failure.splitlines() if ln.startswith("E ")]
    if f.kind in ("crash", "ft-crash"):
        return "`Fatal Python error: ...` with every thread's stack (faulthandler), pytest killed by the signal"
    if f.kind == "hang":
        return "`Timeout` (pytest-timeout) with every thread's stack"
    last = e_lines[0].strip() if e_lines else ""
    return f"`FAILED {f.test_id}`" + (f" with `{last}`" if last and "`" not in last else "")


def recipe_blocks(p: JobEntry, f: Finding, k: int, n: int, runs: int, failure: str = "") -> list[str]:
    """The "How to reproduce" section: its Markdown lines."""
    recipe = laptop_recipe(p, f)
    if not recipe:
        return ["### How to reproduce", "", "No recipe: the finding names no test run to rebuild."]
    lines = recipe.splitlines()
    exe = next((w.split()[0] for w in lines if " -m venv " in w), "python3.13t")
    body = [ln for ln in lines if not ln.startswith("# needs ")]
    out = ["### How to reproduce", "", "The interpreter:", "", _fence("\n".join(_interpreter(p, exe))), ""]
    test_line = body[-1] if body and "pytest" in body[-1] and not body[-1].startswith("#") else ""
    if f.kind not in TEST_KINDS or not test_line:
        out += ["Then, in an empty directory:", "", _fence("\n".join(body)), ""]
        if f.kind == "gil-reenabled":
            out.append(f"Expected: a `RuntimeWarning` naming `{f.module}` and `GIL enabled: True`.")
        elif f.kind == "build-failure":
            out.append("Expected: the build fails as quoted above.")
        return out
    opts = run_options(p, f)
    rate = f"{k} of {n}" if n else "not counted"
    out += [
        "Then, in an empty directory, the release, its tests and the test tools at the run's versions:",
        "",
        _fence("\n".join(body[:-1])),
        "",
        f"The test alone with the GIL off, up to {runs} runs, stopping at the first failure (its GIL-off "
        f"runs failed {rate}; {runs} runs see it with about 95% chance even at a rate well below that):",
        "",
        _fence(loop(test_line, 0, runs)),
        "",
        f"Expected: {_expected_failure(f, failure)}, then `failed on run I of {runs}: reproduced`.",
        "",
        "The same with the GIL on:",
        "",
        _fence(loop(test_line, 1, runs)),
        "",
    ]
    if f.kind == "thread-unsafe" or tuple(f.modes) == (0, 1):
        out.append(f"Expected: it fails with the GIL on too (`failed on run I of {runs}: reproduced`).")
    else:
        out.append(f"Expected: `passed all {runs} runs: not reproduced` (the runs with the GIL on did not fail).")
    if opts:
        out += [
            "",
            f"The harness ran the whole suite with `{opts}`; "
            "alone, the test keeps the thread and timeout options (`-n` only spreads a suite over processes).",
        ]
    return out


def _c(m: Mapping[str, tuple[int, int, int, int]], mode: str) -> str:
    sk, sn, ak, an = m.get(mode, (0, 0, 0, 0))
    k, n = sk + ak, sn + an
    return f"{k}/{n}" if n else "not run"


def class_of(p: JobEntry, f: Finding, counts: Mapping[str, tuple[int, int, int, int]]) -> tuple[str, str]:
    """(the class: a bug of the library, of its tests or of the interpreter; the evidence)."""
    off, on = _c(counts, "gil0"), _c(counts, "gil1")
    both = tuple(f.modes) == (0, 1) or f.kind in ("thread-unsafe", "crash")
    if f.kind == "gil-reenabled":
        return "a bug of the library", (
            f"its extension module `{f.module}` does not declare that it runs without the GIL, so importing "
            "it turns the GIL back on for the whole process."
        )
    if f.kind == "build-failure":
        return "a bug of the library", "its build fails on the free-threaded interpreter (the error above)."
    if both:
        what = "crashes" if f.kind == "crash" else "hangs" if f.kind == "hang" else "fails"
        return "a bug of the tests" if f.kind == "thread-unsafe" else "a bug of the library", (
            f"the test {what} in threads with the GIL on too (GIL off {off}, GIL on {on} runs): not a "
            "free-threading problem; the test (or what it calls) is not safe in threads by design."
        )
    top = f.stack_top or ""
    ours = p.name.replace("-", "_").lower() in top.lower()
    if f.kind == "ft-crash" and top and not ours:
        return "a bug of the interpreter, or of the library's use of it", (
            f"it crashes only with the GIL off (GIL off {off}, GIL on {on} runs), in `{top}`, not in the "
            "package's own frames."
        )
    what = {"ft-crash": "crashes", "hang": "hangs"}.get(f.kind, "fails")
    return "a bug of the library", (
        f"the same test {what} only with the GIL off (GIL off {off}, GIL on {on} runs, the same threads "
        "and iterations): the GIL hid a race in what it calls. Check first that the test shares no state "
        "between its threads by design (then it is the test's, and the fix below does not apply)."
    )


def fix_for(f: Finding) -> str:
    if f.kind == "thread-unsafe":
        return (
            "If the test is not meant to run in threads, mark it "
            "`@pytest.mark.thread_unsafe(reason=...)` (pytest-run-parallel runs it once); otherwise give "
            "each thread its own state (fixtures and module globals are shared between the threads)."
        )
    if f.kind == "gil-reenabled":
        return (
            "When the module is safe without the GIL, say so: the `Py_mod_gil` slot set to "
            "`Py_MOD_GIL_NOT_USED` (multi-phase init) or `PyUnstable_Module_SetGIL(module, "
            "Py_MOD_GIL_NOT_USED)` (single-phase init); Cython `# cython: freethreading_compatible = True`, "
            "pybind11 `py::mod_gil_not_used()`, nanobind `FREE_THREADED`. "
            "https://py-free-threading.github.io/porting/"
        )
    if f.kind == "ft-race":
        return "Guard the state the threads share (a lock, or per-thread state): https://py-free-threading.github.io/porting/"
    if f.kind == "ft-crash":
        return (
            "A ThreadSanitizer build (`./configure --disable-gil --with-thread-sanitizer`) running the "
            "GIL-off loop names the racing access."
        )
    return ""
