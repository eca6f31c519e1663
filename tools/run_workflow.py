"""Run a GitHub Actions workflow of this repository on this machine, as written (#46).

    python tools/run_workflow.py --state DIR [--workflow .github/workflows/matrix.yml]
        [--event workflow_dispatch] [--input matrix=FILE] [--input shards=2] [--env K=V]
        [--run-id N] [--python VERSION=EXE]

The workflow file is read itself: its jobs run in the order of their ``needs``, a job's
``strategy.matrix`` (``fromJSON`` of another job's output included) as one run per entry, each
job's ``run:`` steps in order with ``bash -eo pipefail``, their ``env:``, ``if:``,
``continue-on-error`` and ``timeout-minutes``, ``$GITHUB_OUTPUT`` and ``$GITHUB_STEP_SUMMARY``,
``${{ }}`` expressions (contexts github, inputs, env, steps, needs, matrix; fromJSON, hashFiles,
always, cancelled, success, failure).  The few actions the workflows use are emulated on local
folders under ``--state``:

=============================== =========================================================
actions/checkout                the repository's files (tracked and untracked, not ignored)
actions/setup-python            a fresh venv of ``--python VERSION=EXE`` (default: this
                                Python) first on PATH; ``python-path`` its python
actions/upload-artifact         ``STATE/artifacts/<run>/<name>/``, laid out as upload-artifact
                                does (paths relative to their least common ancestor), links
                                followed as it follows them (to files and to directories:
                                what it would upload is what lands here)
actions/download-artifact       by ``name`` into ``path``; by ``pattern`` each into
                                ``path/<name>/``
actions/cache/restore, /save    ``STATE/caches/<key>/`` (exact key, then the newest entry a
                                restore-key prefixes; only an entry saved with the same
                                ``path``, as actions/cache versions them; a saved key is never
                                overwritten)
actions/upload-pages-artifact   ``STATE/pages-upload/<run>/``; a ``deploy-pages`` job that
actions/deploy-pages            runs makes it the site: ``STATE/site/``
=============================== =========================================================

GitHub-only parts are listed as skipped: ``permissions``, ``concurrency``, ``environment``.
Three commands are shimmed on PATH and say so in the step's output: ``sudo`` (runs the
command), ``apt-get`` (nothing: this machine's packages are used) and ``curl`` for
``https://<owner>.github.io/<repo>/...`` (served from ``STATE/site/``, the last deployed site;
any other URL goes to the real curl).  Everything else runs for real: pip installs, docker,
``ft-harness``.  Each job gets a fresh workspace ``STATE/runs/<run>/<job>/``; the run's account
(jobs, steps, outcomes) is ``STATE/runs/<run>/summary.json``.  Exit 0 when every job that ran
succeeded, 1 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import fnmatch
import glob
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
OWNER, REPO, BRANCH = "ft-harness", "ft-harness", "main"
GITHUB_ONLY = ("permissions", "concurrency", "environment")


class WorkflowError(Exception):
    """Bad input: the workflow or an argument (one line)."""


# ----------------------------------------------------------------------------- expressions

TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||[!(),<>]|<=|>=)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_*][A-Za-z0-9_-]*)*))"
)


def _tokens(text: str) -> list[tuple[str, Any]]:
    out, i = [], 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = TOKEN.match(text, i)
        if not m or m.end() == i:
            raise WorkflowError(f"cannot read the expression {text!r} at {text[i:]!r}")
        i = m.end()
        kind = m.lastgroup or ""
        val: Any = m.group(kind)
        if kind == "str":
            val = val[1:-1].replace("''", "'")
        elif kind == "num":
            val = float(val) if "." in val else int(val)
        out.append((kind, val))
    return out


def truthy(v: Any) -> bool:
    return v not in (None, False, "", 0) and v != 0.0


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()  # GitHub compares strings ignoring case
    return a == b


class Expr:
    """A recursive-descent reader of GitHub's expression syntax over a context dict."""

    def __init__(self, text: str, ctx: dict[str, Any], funcs: dict[str, Any]) -> None:
        self.toks, self.i, self.ctx, self.funcs = _tokens(text), 0, ctx, funcs

    def value(self) -> Any:
        v = self._or()
        if self.i != len(self.toks):
            raise WorkflowError(f"unexpected {self.toks[self.i][1]!r} in an expression")
        return v

    def _peek(self) -> Any:
        return self.toks[self.i][1] if self.i < len(self.toks) and self.toks[self.i][0] == "op" else None

    def _or(self) -> Any:
        v = self._and()
        while self._peek() == "||":
            self.i += 1
            r = self._and()
            v = v if truthy(v) else r
        return v

    def _and(self) -> Any:
        v = self._cmp()
        while self._peek() == "&&":
            self.i += 1
            r = self._cmp()
            v = r if truthy(v) else v
        return v

    def _cmp(self) -> Any:
        v = self._unary()
        while self._peek() in ("==", "!="):
            op = self.toks[self.i][1]
            self.i += 1
            r = self._unary()
            v = _eq(v, r) if op == "==" else not _eq(v, r)
        return v

    def _unary(self) -> Any:
        if self._peek() == "!":
            self.i += 1
            return not truthy(self._unary())
        return self._atom()

    def _atom(self) -> Any:
        kind, val = self.toks[self.i]
        self.i += 1
        if kind == "op" and val == "(":
            v = self._or()
            self.i += 1  # ")"
            return v
        if kind in ("str", "num"):
            return val
        if val in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[val]
        if self._peek() == "(":  # a function call
            self.i += 1
            args = []
            while self._peek() != ")":
                args.append(self._or())
                if self._peek() == ",":
                    self.i += 1
            self.i += 1
            if val not in self.funcs:
                raise WorkflowError(f"unknown function {val}()")
            return self.funcs[val](*args)
        cur: Any = self.ctx
        for part in val.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        return cur


INTERP = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def render(value: Any, ctx: dict[str, Any], funcs: dict[str, Any]) -> Any:
    """A workflow value with its ``${{ }}`` expressions evaluated (a lone one keeps its type)."""
    if not isinstance(value, str):
        return value
    m = INTERP.fullmatch(value.strip())
    if m:
        return Expr(m.group(1), ctx, funcs).value()
    return INTERP.sub(lambda m: _text(Expr(m.group(1), ctx, funcs).value()), value)


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict | list):
        return json.dumps(v)
    return str(v)


STATUS = re.compile(r"\b(success|failure|always|cancelled)\s*\(")


def condition(text: Any, ctx: dict[str, Any], funcs: dict[str, Any]) -> bool:
    """An ``if:``: an expression with or without ``${{ }}``; ``success() &&`` unless it asks a
    status function itself."""
    if text is None:
        return bool(funcs["success"]())
    s = str(text).strip()
    m = INTERP.fullmatch(s)
    s = m.group(1) if m else s
    if not STATUS.search(s):
        s = f"success() && ({s})"
    return truthy(Expr(s, ctx, funcs).value())


# ----------------------------------------------------------------------------- actions


class Run:
    """One run of the workflow: its state dirs, contexts and what happened."""

    def __init__(self, args: argparse.Namespace, wf: dict[str, Any]) -> None:
        self.args, self.wf = args, wf
        self.state = Path(args.state).resolve()
        self.run_id = str(args.run_id or int(time.time() * 1000))
        self.dir = self.state / "runs" / self.run_id
        self.artifacts = self.state / "artifacts" / self.run_id
        self.jobs: dict[str, dict[str, Any]] = {}  # job id -> {"result", "outputs"}
        self.account: list[dict[str, Any]] = []
        self.inputs = self._inputs()
        self.python = dict(p.split("=", 1) for p in args.python)
        self.shims = self._shims()

    def _inputs(self) -> dict[str, Any]:
        declared = ((self.wf.get(True) or self.wf.get("on") or {}).get("workflow_dispatch") or {}).get("inputs") or {}
        given = dict(i.split("=", 1) for i in self.args.input)
        unknown = set(given) - set(declared)
        if unknown:
            raise WorkflowError(f"--input {sorted(unknown)[0]}: the workflow declares {sorted(declared)}")
        if self.args.event != "workflow_dispatch":
            return {}
        return {k: given.get(k, (v or {}).get("default", "")) for k, v in declared.items()}

    def github(self, workspace: Path) -> dict[str, Any]:
        return {
            "event_name": self.args.event,
            "run_id": self.run_id,
            "workspace": str(workspace),
            "repository_owner": OWNER,
            "repository": f"{OWNER}/{REPO}",
            "ref_name": BRANCH,
            "ref": f"refs/heads/{BRANCH}",
            "workflow": self.wf.get("name", ""),
            "event": {"repository": {"name": REPO, "default_branch": BRANCH}},
        }

    def _shims(self) -> Path:
        d = self.dir / "shims"
        d.mkdir(parents=True, exist_ok=True)
        real_curl = shutil.which("curl") or "/usr/bin/curl"
        site = self.state / "site"
        scripts = {
            "sudo": '#!/bin/sh\necho "[run_workflow] sudo: emulated (runs the command as this user)" >&2\n'
            'while [ $# -gt 0 ]; do case "$1" in -*) shift;; *) break;; esac; done\nexec "$@"\n',
            # the system's apt-get is not run; a private one (the harness's APT_CONFIG) is
            "apt-get": f'#!/bin/sh\n[ -n "$APT_CONFIG" ] && exec {shutil.which("apt-get") or "/usr/bin/apt-get"} "$@"\n'
            'echo "[run_workflow] apt-get $*: emulated (this machine\'s packages are used)" >&2\n',
            "curl": f'#!/bin/bash\nprefix="https://{OWNER}.github.io/{REPO}/"\nout=""; url=""\n'
            'args=("$@")\nwhile [ $# -gt 0 ]; do case "$1" in -o) out="$2"; shift 2;; '
            '--max-time|--retry) shift 2;; -*) shift;; *) url="$1"; shift;; esac; done\n'
            'if [ "${url#"$prefix"}" != "$url" ]; then\n'
            f'  f="{site}/${{url#"$prefix"}}"\n'
            '  echo "[run_workflow] curl $url: emulated (the last deployed site)" >&2\n'
            '  [ -f "$f" ] || exit 22\n  if [ -n "$out" ]; then cp "$f" "$out"; else cat "$f"; fi\n'
            "else\n"
            f'  exec {real_curl} "${{args[@]}}"\nfi\n',
        }
        for name, text in scripts.items():
            (d / name).write_text(text)
            (d / name).chmod(0o755)
        return d

    # ------------------------------------------------------------------ actions

    def action(self, uses: str, with_: dict[str, Any], ws: Path, env: dict[str, str]) -> tuple[dict[str, str], str]:
        """(outputs, what was done) of an emulated action; WorkflowError for one not known."""
        name = uses.split("@", 1)[0]
        if name == "actions/checkout":
            return {}, self._checkout(ws)
        if name == "actions/setup-python":
            return self._setup_python(str(with_.get("python-version", "")), ws, env)
        if name == "actions/upload-artifact":
            return {}, self._upload(str(with_["name"]), str(with_["path"]), ws)
        if name == "actions/download-artifact":
            return {}, self._download(with_, ws)
        if name == "actions/cache/restore":
            return self._restore(with_, ws)
        if name == "actions/cache/save":
            return {}, self._save(with_, ws)
        if name == "actions/upload-pages-artifact":
            dst = self.state / "pages-upload" / self.run_id
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(ws / str(with_["path"]), dst, symlinks=True)
            return {}, f"the site copied to {dst}"
        if name == "actions/deploy-pages":
            src = self.state / "pages-upload" / self.run_id
            shutil.rmtree(self.state / "site", ignore_errors=True)
            shutil.copytree(src, self.state / "site", symlinks=True)
            return {"page_url": f"https://{OWNER}.github.io/{REPO}/"}, f"{src} is the site now"
        raise WorkflowError(f"action {uses} is not emulated")

    def _checkout(self, ws: Path) -> str:
        files = (
            subprocess.run(
                ["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True
            )
            .stdout.decode()
            .split("\0")
        )
        n = 0
        for f in filter(None, files):
            src = ROOT / f
            if not src.is_file() and not src.is_symlink():
                continue  # deleted in the worktree
            dst = ws / f
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst, follow_symlinks=False)
            n += 1
        return f"{n} files of {ROOT}"

    def _setup_python(self, version: str, ws: Path, env: dict[str, str]) -> tuple[dict[str, str], str]:
        exe = self.python.get(version) or (None if version.endswith("t") else sys.executable)
        if exe is None:
            return {"python-path": ""}, f"python {version}: not on this machine (--python {version}=EXE)"
        venv = ws.parent / f"{ws.name}.python-{version}"
        if not venv.exists():
            subprocess.run([exe, "-m", "venv", str(venv)], check=True)
        env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"
        return {
            "python-path": str(venv / "bin" / "python"),
            "python-version": version,
        }, f"python {version}: a venv of {exe}"

    def _upload(self, name: str, paths: str, ws: Path) -> str:
        dst = self.artifacts / name
        if dst.exists():
            raise WorkflowError(f"artifact {name} uploaded twice in run {self.run_id}")
        found: list[Path] = []
        for pat in (p.strip() for p in paths.splitlines()):
            if pat:
                found += [Path(p) for p in glob.glob(str(ws / pat), recursive=True)]
        found = [p for p in found if p.exists()]
        if not found:
            return "no files (if-no-files-found: warn)"
        base = Path(os.path.commonpath([str(p if p.is_dir() else p.parent) for p in found]))
        n = 0
        for p in found:  # files and the trees under dirs, relative to the least common ancestor
            for f in [p] if p.is_file() else _followed(p):
                out = dst / f.relative_to(base)
                try:
                    out.parent.mkdir(parents=True, exist_ok=True)
                    n += _copy_followed(f, out)
                except OSError:
                    continue  # a path too long, a file gone or unreadable: not in the artifact
        return f"{name}: {n} files from {base}"

    def _download(self, with_: dict[str, Any], ws: Path) -> str:
        target = ws / str(with_.get("path") or ".")
        if with_.get("name"):
            src = self.artifacts / str(with_["name"])
            if not src.is_dir():
                raise StepFailed(
                    f"artifact {with_['name']} not found in run {self.run_id}"
                )  # as GitHub: the step fails
            shutil.copytree(src, target, dirs_exist_ok=True)
            return f"{with_['name']} into {target}"
        have = list(self.artifacts.iterdir()) if self.artifacts.is_dir() else []
        names = sorted(p.name for p in have if fnmatch.fnmatch(p.name, str(with_["pattern"])))
        if not names:
            return f"no artifact matches {with_['pattern']}"
        for n in names:
            shutil.copytree(self.artifacts / n, target / n, dirs_exist_ok=True)
        return f"{', '.join(names)} into {target}"

    @staticmethod
    def _version(with_: dict[str, Any]) -> str:
        """actions/cache's version of an entry: its paths (an entry saved with other paths is
        not restored, whatever its key)."""
        return hashlib.sha256("\n".join(str(with_["path"]).split()).encode()).hexdigest()[:16]

    def _restore(self, with_: dict[str, Any], ws: Path) -> tuple[dict[str, str], str]:
        caches = self.state / "caches"
        key, version = str(with_["key"]), self._version(with_)

        def fits(p: Path) -> bool:
            return p.is_dir() and (p / ".version").is_file() and (p / ".version").read_text() == version

        hit = caches / key if fits(caches / key) else None
        exact = hit is not None
        if hit is None:
            for prefix in str(with_.get("restore-keys") or "").split():
                entries = (
                    [p for p in caches.glob("*") if p.name.startswith(prefix) and fits(p)] if caches.is_dir() else []
                )
                if entries:
                    hit = max(entries, key=lambda p: p.stat().st_mtime)
                    break
        if hit is None:
            if str(with_.get("fail-on-cache-miss", "")).lower() == "true":
                raise StepFailed(f"cache {key}: not found (fail-on-cache-miss)")
            return {"cache-hit": "false"}, f"{key}: no entry"
        for p in str(with_["path"]).split():
            kept = hit / _entry(p)
            if kept.is_dir():
                shutil.copytree(kept, ws / p, dirs_exist_ok=True, symlinks=True)
            elif kept.exists():
                (ws / p).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(kept, ws / p)
        return {"cache-hit": "true" if exact else "false", "cache-matched-key": hit.name}, f"restored {hit.name}"

    def _save(self, with_: dict[str, Any], ws: Path) -> str:
        dst = self.state / "caches" / str(with_["key"])
        if dst.exists():
            return f"{dst.name}: exists, not saved again"
        tmp = dst.with_name(dst.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for p in str(with_["path"]).split():
            src, kept = ws / p, tmp / _entry(p)
            kept.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, kept, symlinks=True)
            elif src.exists():
                shutil.copy2(src, kept)
        (tmp / ".version").write_text(self._version(with_))
        tmp.rename(dst)
        return f"saved {dst.name}"


UPLOAD_FILES = 200_000  # files one emulated upload may find (a link to / would find them all)


def _followed(root: Path) -> list[Path]:
    """Every file below ``root`` as actions/upload-artifact finds it: links to files and to
    directories followed (@actions/glob's followSymbolicLinks, its default), each directory once
    (a link loop ends), without recursion; a path it cannot stat (too long, unreadable) skipped."""
    files: list[Path] = []
    seen: set[tuple[int, int]] = set()
    todo = [root]
    while todo:
        d = todo.pop()
        try:
            st = d.stat()
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir():  # follows a link
                    todo.append(Path(e.path))
                elif e.is_file():  # follows a link: the file it points at is uploaded
                    files.append(Path(e.path))
            except OSError:
                continue
        if len(files) > UPLOAD_FILES:
            raise StepFailed(f"upload: more than {UPLOAD_FILES} files below {root}")
    return files


def _copy_followed(src: Path, dst: Path) -> int:
    """1 when the file at ``src`` (a link followed, as upload-artifact reads it) was copied to
    ``dst``; 0 when it is not a regular file once followed (a FIFO would block the upload)."""
    fd = os.open(src, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return 0
        with dst.open("wb") as out:
            shutil.copyfileobj(f, out)  # to the end: /proc files say size 0
    return 1


def _entry(path: str) -> str:
    """Where a cached path is kept inside its entry: an absolute one (a runner's tool cache,
    ``${{ env.X }}/wheels``) under its own name, relative to the entry."""
    return path.lstrip("/") or "."


class StepFailed(Exception):
    """A step (or an emulated action) failed."""


# ----------------------------------------------------------------------------- jobs


def _funcs(run: Run, ws: Path, state: dict[str, str]) -> dict[str, Any]:
    def hash_files(*pats: str) -> str:
        h = hashlib.sha256()
        files = sorted({f for p in pats if p for f in glob.glob(str(ws / p), recursive=True) if os.path.isfile(f)})
        for f in files:
            h.update(hashlib.sha256(Path(f).read_bytes()).digest())
        return h.hexdigest() if files else ""

    return {
        "fromJSON": lambda s: json.loads(s),
        "toJSON": lambda v: json.dumps(v),
        "hashFiles": hash_files,
        "always": lambda: True,
        "cancelled": lambda: False,
        "success": lambda: state["status"] == "success",
        "failure": lambda: state["status"] == "failure",
        "contains": lambda a, b: (b in a) if isinstance(a, list | str) else False,
        "startsWith": lambda a, b: str(a).lower().startswith(str(b).lower()),
        "format": lambda f, *a: re.sub(r"\{(\d+)\}", lambda m: _text(a[int(m.group(1))]), f),
    }


def run_job(run: Run, job_id: str, job: dict[str, Any], matrix: dict[str, Any] | None, label: str) -> str:
    """Run one job (one matrix entry); its result: success or failure."""
    ws = run.dir / label / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    needs = {n: run.jobs[n] for n in _needs(job)}
    env: dict[str, str] = {
        **os.environ,
        "PATH": f"{run.shims}:{os.environ['PATH']}",
        "CI": "true",
        "GITHUB_WORKSPACE": str(ws),
        "RUNNER_OS": "Linux",
        "GITHUB_RUN_ID": run.run_id,
        "GITHUB_EVENT_NAME": run.args.event,
        "HOME": os.environ.get("HOME", "/root"),
    }
    env.update(dict(e.split("=", 1) for e in run.args.env))
    ctx: dict[str, Any] = {
        "github": run.github(ws),
        "inputs": run.inputs,
        "needs": needs,
        "matrix": matrix or {},
        "steps": {},
        "env": {},
        "runner": {"os": "Linux"},
    }
    state = {"status": "success"}
    funcs = _funcs(run, ws, state)
    for scope in (run.wf.get("env") or {}, job.get("env") or {}):
        for k, v in scope.items():
            ctx["env"][k] = _text(render(v, ctx, funcs))
    skipped = [k for k in GITHUB_ONLY if k in job]
    run.account.append({"job": label, "github_only_skipped": skipped})
    for i, step in enumerate(job.get("steps") or []):
        _step(run, label, i, step, ws, env, ctx, funcs, state)
    outputs = {k: _text(render(v, ctx, funcs)) for k, v in (job.get("outputs") or {}).items()}
    if matrix is None:
        run.jobs[job_id] = {"result": state["status"], "outputs": outputs}
    return state["status"]


def _step(
    run: Run,
    label: str,
    i: int,
    step: dict[str, Any],
    ws: Path,
    env: dict[str, str],
    ctx: dict[str, Any],
    funcs: dict[str, Any],
    state: dict[str, str],
) -> None:
    name = step.get("name") or step.get("uses") or (step.get("run") or "").splitlines()[0]
    row: dict[str, Any] = {"job": label, "step": i, "name": name}
    run.account.append(row)
    if not condition(step.get("if"), ctx, funcs):
        row["outcome"] = "skipped (if)"
        print(f"[{label}] {name}: skipped (if: false)", flush=True)
        return
    senv = {**env, **ctx["env"], **{k: _text(render(v, ctx, funcs)) for k, v in (step.get("env") or {}).items()}}
    out_file, summary = ws.parent / f"output-{i}", ws.parent / "step-summary.md"
    out_file.write_text("")
    senv.update(GITHUB_OUTPUT=str(out_file), GITHUB_STEP_SUMMARY=str(summary))
    outputs: dict[str, str] = {}
    try:
        if "uses" in step:
            with_ = {k: render(v, ctx, funcs) for k, v in (step.get("with") or {}).items()}
            outputs, what = run.action(str(step["uses"]), with_, ws, env)
            row["outcome"], row["emulated"] = "success", what
            print(f"[{label}] {name}: emulated: {what}", flush=True)
        else:
            script = render(step["run"], ctx, funcs)
            minutes = float(step.get("timeout-minutes") or 360)
            print(f"[{label}] {name}: run", flush=True)
            with open(ws.parent / f"step-{i}.log", "wb") as log:
                rc = subprocess.run(
                    ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                    cwd=ws,
                    env=senv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=minutes * 60,
                ).returncode
            row["log"] = str(ws.parent / f"step-{i}.log")
            if rc:
                raise StepFailed(f"exit {rc} (log {row['log']})")
            row["outcome"] = "success"
            for line in out_file.read_text().splitlines():
                if "=" in line:
                    k, v = line.split("=", 1)
                    outputs[k] = v
    except (StepFailed, subprocess.TimeoutExpired, OSError) as e:
        coe = truthy(render(step.get("continue-on-error", False), ctx, funcs))
        row["outcome"] = "failure (continue-on-error)" if coe else "failure"
        row["error"] = str(e)
        print(f"[{label}] {name}: FAILED: {e}" + (" (continue-on-error)" if coe else ""), flush=True)
        if not coe:
            state["status"] = "failure"
    if step.get("id"):
        ctx["steps"][step["id"]] = {"outputs": outputs, "outcome": row["outcome"]}


def _needs(job: dict[str, Any]) -> list[str]:
    n = job.get("needs") or []
    return [n] if isinstance(n, str) else list(n)


def _order(jobs: dict[str, Any]) -> list[str]:
    done: list[str] = []
    while len(done) < len(jobs):
        ready = [j for j in jobs if j not in done and all(n in done for n in _needs(jobs[j]))]
        if not ready:
            raise WorkflowError("the jobs' needs form a cycle")
        done.append(ready[0])
    return done


def run_workflow(run: Run) -> int:
    jobs = run.wf.get("jobs") or {}
    for job_id in _order(jobs):
        job = jobs[job_id]
        needs = {n: run.jobs[n] for n in _needs(job)}
        ctx = {"github": run.github(run.dir), "inputs": run.inputs, "needs": needs}
        failed = any(v["result"] != "success" for v in needs.values())
        funcs = _funcs(run, run.dir, {"status": "failure" if failed else "success"})
        if not condition(job.get("if"), ctx, funcs):
            run.jobs[job_id] = {"result": "skipped", "outputs": {}}
            run.account.append({"job": job_id, "outcome": "skipped (if)"})
            print(f"[{job_id}] skipped (if: false)", flush=True)
            continue
        strategy = render((job.get("strategy") or {}).get("matrix"), ctx, funcs)
        entries = strategy.get("include", []) if isinstance(strategy, dict) else []
        if strategy is None:
            result = run_job(run, job_id, job, None, job_id)
        else:
            results = [run_job(run, job_id, job, m, f"{job_id}-{k + 1}") for k, m in enumerate(entries)]
            result = "success" if all(r == "success" for r in results) else "failure"
            run.jobs[job_id] = {"result": result, "outputs": {}}
        print(f"[{job_id}] {result}", flush=True)
    (run.dir / "summary.json").write_text(
        json.dumps(
            {
                "run_id": run.run_id,
                "event": run.args.event,
                "inputs": run.inputs,
                "jobs": run.jobs,
                "steps": run.account,
            },
            indent=1,
        )
    )
    return 0 if all(j["result"] in ("success", "skipped") for j in run.jobs.values()) else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workflow", default=str(ROOT / ".github" / "workflows" / "matrix.yml"))
    ap.add_argument("--state", required=True, help="where caches, artifacts, the site and runs are kept")
    ap.add_argument("--event", default="workflow_dispatch", choices=("workflow_dispatch", "schedule", "pull_request"))
    ap.add_argument("--input", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment value for every step (as a runner's environment)",
    )
    ap.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="VERSION=EXE",
        help="what setup-python gives for VERSION (default: this Python; a free-threaded one: none)",
    )
    ap.add_argument("--run-id", help="default: the time in ms")
    args = ap.parse_args(argv)
    try:
        for v in (*args.input, *args.env, *args.python):
            if "=" not in v:
                raise WorkflowError(f"{v!r}: expected NAME=VALUE")
        try:
            wf = yaml.safe_load(Path(args.workflow).read_text())
        except (OSError, yaml.YAMLError) as e:
            raise WorkflowError(f"{args.workflow}: {e}") from None
        return run_workflow(Run(args, wf))
    except WorkflowError as e:
        print(f"run_workflow: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
