"""The worker side of a tasks run: what every engine runs on the machine where a base lives.

``prepare`` makes a base ready once (a mirror of its repository, a checkout of the base, its
environment, its review map, its dependency map recorded); ``gate_pair`` gates one
candidate against it in a child ``patchlane triage`` and returns the row and the evidence as
bytes. Everything lives under ``RunPlan.work_dir``:

- ``mirrors/<repo key>.git``: one bare mirror per repository, fetched only for commits it
  lacks, under a lock file (``<repo key>.lock``) so that two preparations on one machine
  never race;
- ``bases/<base key>/``: the checkout of one base (and ``<base key>.json``, written last:
  the commit the gates take as ``--base``);
- ``envs/<env key>/``: a virtual environment made by a task's ``setup``, cached by base
  commit and command;
- ``maps/``: the dependency-map cache every gate of the machine shares;
- ``pairs/``: one throwaway folder per gate (the diff, the child's out dir).

What runs where (docs/reference/tasks-file.md): git, ``venv`` and ``patchlane init``'s
survey run as the user; a task's ``setup`` runs in the sandbox with the network (it installs
packages) and only the checkout and its environment writable; the gates are ordinary
``patchlane triage`` runs, which run the patch's code only in their own sandbox.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import re
import shutil
import signal
import site
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import patchlane
from patchlane.errors import PatchlaneError
from patchlane.infra import children, sandbox
from patchlane.triage.units import BaseSpec, Pair, PairResult, Prepared, RunPlan, infra_result
from patchlane.triage.units import content_key as _content_key

if TYPE_CHECKING:
    from patchlane.infra.sandbox import Isolation

MAP_FILE = "review-map.yml"
GIT_TIMEOUT_S = 1800.0
SETUP_TIMEOUT_S = 3600.0
INIT_TIMEOUT_S = 900.0
MAP_TIMEOUT_S = 1800.0
TAIL = 400
# The scaffold commit's identity and date: fixed, so that every machine preparing one base
# makes the same commit (the same ``gate_base``, the same dependency map).
SCAFFOLD_ENV = {
    "GIT_AUTHOR_NAME": "patchlane",
    "GIT_AUTHOR_EMAIL": "patchlane@invalid",
    "GIT_COMMITTER_NAME": "patchlane",
    "GIT_COMMITTER_EMAIL": "patchlane@invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+00:00",
}


class SetupFailed(PatchlaneError):
    """A base could not be made ready (its repository, commit, environment or map); the
    message is one line, any password or token of a URL in it left out. An
    infrastructure failure for every pair of the base."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(" ".join(message.split())))


# The user-information part of a URL (``https://user:token@host/``): never repeated in a
# message, a row or a commit, which outlive the run.
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


def redact(text: str) -> str:
    """Return ``text`` with the user information of every URL in it replaced by ``***@``."""
    return _USERINFO.sub("***@", text)


@dataclass(frozen=True)
class _Ran:
    """A child's end: ``code`` (negative: a signal), ``timed_out``, its output's tail."""

    code: int
    timed_out: bool
    output: bytes

    def tail(self) -> str:
        lines = [x for x in self.output.decode("utf-8", "replace").splitlines() if x.strip()]
        # The line that says what went wrong (git's "fatal:", patchlane's "error:"), not
        # the hint after it; else the last line.
        said = [x for x in lines if x.lstrip().lower().startswith(("fatal:", "error:"))]
        line = said[0] if said else (lines[-1] if lines else "")
        return " ".join(line.split())[:TAIL]

    def why(self, what: str) -> str:
        if self.timed_out:
            return f"{what} ran past its time and was killed"
        if self.code < 0:
            return f"{what} was killed by {_signal_name(-self.code)}"
        tail = f": {self.tail()}" if self.tail() else ""
        return f"{what} exited {self.code}{tail}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _run(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float,
    output: Path | None = None,
    errors: Path | None = None,
) -> _Ran:
    """Run ``argv`` in its own process group (so that a timeout, or a Ctrl-C of the driver,
    kills its children too); return how it ended and its output (stdout and stderr
    together, kept in ``output`` when given, else in a temporary file: never a pipe a
    chatty child could fill; stderr apart, in ``errors``, when that is given). Raises
    ``OSError`` when it cannot be started."""

    with contextlib.ExitStack() as stack:
        sink = (
            stack.enter_context(output.open("w+b"))
            if output is not None
            else stack.enter_context(tempfile.TemporaryFile())
        )
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT if errors is None else stack.enter_context(errors.open("wb")),
            start_new_session=True,
        )
        timed_out = False
        try:
            with children.watched(proc.pid):
                try:
                    proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    timed_out = True
                finally:
                    # The whole group, always: a grandchild left running would outlive
                    # the gate it belongs to.
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        except BaseException:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        sink.seek(0, os.SEEK_END)
        size = sink.tell()
        sink.seek(max(0, size - 64 * 1024))
        return _Ran(proc.returncode, timed_out, sink.read())


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"  # a URL that wants a password fails, never waits
    env["LC_ALL"] = "C"
    return env


def _git(*args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None) -> _Ran:
    argv = ["git", "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null", *args]
    return _run(argv, cwd=cwd, env=env or _git_env(), timeout_s=GIT_TIMEOUT_S)


def _must(ran: _Ran, what: str) -> None:
    if ran.code != 0 or ran.timed_out:
        raise SetupFailed(ran.why(what))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` for the block (waits for another
    process or thread holding it). The kernel drops it when its holder dies, so a killed
    preparation never leaves the next one waiting."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def prepare(spec: BaseSpec, plan: RunPlan) -> Prepared:
    """Make the base ``spec`` ready under ``plan.work_dir`` on this machine: its checkout,
    its interpreter, its review map (the base's own, else the task's ``map``, else ``patchlane
    init``'s scaffold, committed on the base) and its dependency map recorded.

    Returns the ``Prepared`` base. Raises ``SetupFailed`` (one line) when any step fails:
    a repository or commit that cannot be fetched, a ``python`` without this patchlane,
    a ``setup`` that fails, a scaffold that cannot be made."""
    start = time.monotonic()
    work = Path(plan.work_dir).absolute()
    try:
        # One preparation of a base at a time on this machine (a retry, two engines'
        # workers): the second finds the first's checkout ready.
        with _locked(work / "bases" / f"{spec.key[:24]}.lock"):
            checkout, scaffolded = _checkout(spec, work)
            python = _environment(spec, work, checkout)
            gate_base = scaffolded or _review_map(spec, work, checkout, python)
            _record_map(checkout, python, gate_base, work)
    except OSError as e:
        raise SetupFailed(f"preparing {spec.base_commit[:12]}: {e.strerror or e}") from e
    return Prepared(
        base_key=spec.key,
        checkout=os.fspath(checkout),
        python=python,
        gate_base=gate_base,
        node=socket.gethostname(),
        seconds=time.monotonic() - start,
    )


def _checkout(spec: BaseSpec, work: Path) -> tuple[Path, str | None]:
    """Return the base's checkout (made from the repository's mirror, or one a finished
    preparation left) and its ``gate_base`` when that preparation recorded one."""
    base_dir = work / "bases"
    checkout = base_dir / spec.key[:24]
    marker = base_dir / f"{spec.key[:24]}.json"
    if marker.is_file():
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            gate_base = json.loads(marker.read_text(encoding="utf-8"))["gate_base"]
            if isinstance(gate_base, str) and (checkout / ".git").is_dir():
                return checkout, gate_base
        marker.unlink(missing_ok=True)
    mirror = _mirror(spec, work)
    if checkout.exists():  # left by a preparation that did not finish
        shutil.rmtree(checkout)
    _must(_git("clone", "-q", "--local", "--no-checkout", os.fspath(mirror),
               os.fspath(checkout)), "git clone of the mirror")  # fmt: skip
    _must(_git("checkout", "-q", "--detach", spec.base_commit, cwd=checkout),
          f"git checkout {spec.base_commit[:12]}")  # fmt: skip
    return checkout, None


def _mirror(spec: BaseSpec, work: Path) -> Path:
    """Return the repository's bare mirror under ``work``, holding ``spec.base_commit``
    under a ref of its own (fetched now when it was missing)."""
    name = _content_key({"repo": spec.repo})[:24]
    mirror = work / "mirrors" / f"{name}.git"
    commit = spec.base_commit
    with _locked(work / "mirrors" / f"{name}.lock"):
        if not (mirror / "HEAD").is_file():
            if mirror.exists():
                shutil.rmtree(mirror)
            _must(_git("init", "-q", "--bare", os.fspath(mirror)), "git init of the mirror")
        if not _has_commit(mirror, commit):
            # By id first (one commit's history); a server that refuses unadvertised ids
            # gets asked for its branches and tags instead.
            ran = _git("fetch", "-q", "--no-tags", spec.repo, commit, cwd=mirror)
            if ran.code != 0 or not _has_commit(mirror, commit):
                ran = _git(
                    "fetch", "-q", spec.repo,
                    "+refs/heads/*:refs/mirror/heads/*", "+refs/tags/*:refs/mirror/tags/*",
                    cwd=mirror,
                )  # fmt: skip
                _must(ran, f"git fetch {spec.repo}")
            if not _has_commit(mirror, commit):
                raise SetupFailed(f"{spec.repo}: has no commit {commit}")
        _must(
            _git("update-ref", f"refs/patchlane/{commit}", commit, cwd=mirror),
            "git update-ref in the mirror",
        )
    return mirror


def _has_commit(repo: Path, commit: str) -> bool:
    return _git("cat-file", "-e", f"{commit}^{{commit}}", cwd=repo).code == 0


def _environment(spec: BaseSpec, work: Path, checkout: Path) -> str:
    """Return the interpreter the base's gates run under."""
    if spec.python is not None:
        return _checked_python(spec.python)
    if spec.setup is not None:
        return _setup_env(spec, work, checkout)
    return sys.executable


def _checked_python(given: str) -> str:
    """Return ``given`` (a path or a name on ``PATH``) resolved, once it imports this very
    patchlane version. Raises ``SetupFailed`` saying how to install it otherwise."""
    found = shutil.which(given)
    if found is None:
        raise SetupFailed(f"python {given!r}: no such interpreter")
    python = os.fspath(Path(found).absolute())
    version = patchlane.__version__
    how = f"install it: {python} -m pip install 'patchlane=={version}'"
    probe = "import patchlane,sys;sys.stdout.write(patchlane.__version__)"
    try:
        ran = _run([python, "-c", probe], timeout_s=120.0)
    except OSError as e:
        raise SetupFailed(f"python {given!r}: cannot run: {e.strerror or e}") from e
    if ran.code != 0 or ran.timed_out:
        raise SetupFailed(f"python {given!r} cannot import patchlane ({ran.why('it')}); {how}")
    seen = ran.output.decode("utf-8", "replace").strip()
    if seen != version:
        raise SetupFailed(f"python {given!r} has patchlane {seen[:40]!r}, not {version}; {how}")
    return python


def _site_lines() -> list[str]:
    """The lines of the ``.pth`` that lets a setup's environment see patchlane and its
    dependencies after its own packages: the driver's site directories (their own
    ``.pth`` files processed, editable installs included) and the folder patchlane is
    imported from."""

    dirs = [*site.getsitepackages()]
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    lines = [f"import site; site.addsitedir({d!r})" for d in dirs if Path(d).is_dir()]
    lines.append(os.fspath(Path(patchlane.__file__).resolve().parent.parent))
    return lines


def _setup_env(spec: BaseSpec, work: Path, checkout: Path) -> str:
    """Return the interpreter of the setup's virtual environment, made (once per base
    commit and command, under a lock) and then set up by ``spec.setup`` in the sandbox."""
    setup = spec.setup or ""
    key = _content_key({"base_commit": spec.base_commit, "setup": setup})[:24]
    env_dir = work / "envs" / key
    python = env_dir / "bin" / "python"
    ready = work / "envs" / f"{key}.ready"
    with _locked(work / "envs" / f"{key}.lock"):
        if ready.is_file() and python.exists():
            return os.fspath(python)
        if env_dir.exists():
            shutil.rmtree(env_dir)
        made = _run([sys.executable, "-m", "venv", os.fspath(env_dir)], timeout_s=600.0)
        _must(made, "python -m venv")
        purelib = _run([os.fspath(python), "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"], timeout_s=120.0)  # fmt: skip
        _must(purelib, "the new environment's python")
        site_dir = Path(purelib.output.decode().strip())
        (site_dir / "zz-patchlane-driver.pth").write_text(
            "\n".join(_site_lines()) + "\n", encoding="utf-8"
        )
        log = work / "envs" / f"{key}.log"
        ran = _setup_in_sandbox(setup, checkout, env_dir, log)
        if ran.code != 0 or ran.timed_out:
            raise SetupFailed(ran.why(f"setup {setup[:80]!r}") + f" (log: {log})")
        ready.write_text(setup + "\n", encoding="utf-8")
    return os.fspath(python)


def _setup_in_sandbox(command: str, checkout: Path, env_dir: Path, log: Path) -> _Ran:
    """Run ``command`` with ``/bin/sh -c`` from the checkout, the environment's ``bin``
    first on ``PATH`` (``VIRTUAL_ENV`` set): in patchlane's sandbox with only the checkout,
    the environment and a scratch directory (its ``HOME`` and ``TMPDIR``) writable, the
    user's home and credentials hidden, but with the network (a setup installs packages).
    Returns how it ended; raises ``OSError`` when it cannot be started."""

    with tempfile.TemporaryDirectory(prefix="patchlane-setup-") as scratch:
        confinement = sandbox.Confinement(Path(scratch), writable=(checkout, env_dir))
        isolation = sandbox.isolation()
        argv = isolation.command(["/bin/sh", "-c", command], confinement, checkout)
        argv = _with_network(argv, isolation)
        env = sandbox.confined_env(os.environ, Path(scratch))
        env["VIRTUAL_ENV"] = os.fspath(env_dir)
        env["PATH"] = os.pathsep.join((os.fspath(env_dir / "bin"), env.get("PATH", os.defpath)))
        env.pop("PYTHONHOME", None)
        return _run(argv, cwd=checkout, env=env, timeout_s=SETUP_TIMEOUT_S, output=log)


def _with_network(argv: list[str], isolation: Isolation) -> list[str]:
    """``argv`` (a sandboxed command) with the host's network kept: bubblewrap's
    ``--share-net`` after its ``--unshare-all``; without bwrap, the network-namespace
    prefix dropped. Only a setup gets this; the gates never do."""
    if isolation.bwrap is not None and "--unshare-all" in argv:
        at = argv.index("--unshare-all") + 1
        return [*argv[:at], "--share-net", *argv[at:]]
    prefix = list(isolation.netns_prefix)
    if prefix and argv[: len(prefix)] == prefix:
        return argv[len(prefix) :]
    return argv


def _review_map(spec: BaseSpec, work: Path, checkout: Path, python: str) -> str:
    """Return the commit the gates take as ``--base``: the base itself when it has a
    review map; else a commit on it adding the task's ``map`` or ``patchlane init``'s
    scaffold (fixed author and date: the same commit on every machine), recorded in the
    base's marker file."""
    commit = spec.base_commit
    has_map = _git("cat-file", "-e", f"{commit}:{MAP_FILE}", cwd=checkout).code == 0
    if has_map:
        gate_base = commit
    else:
        if spec.map_text is not None:
            (checkout / MAP_FILE).write_text(spec.map_text, encoding="utf-8")
            paths = [MAP_FILE]
        else:
            paths = _scaffold(checkout, python)
        _must(_git("add", "-f", "--", *paths, cwd=checkout), "git add of the review map")
        what = "the task's review map" if spec.map_text is not None else "patchlane init's scaffold"
        message = f"patchlane triage --tasks: {what} for {redact(spec.repo)} at {commit[:12]}"
        env = {**_git_env(), **SCAFFOLD_ENV}
        _must(_git("commit", "-q", "--no-verify", "-m", message, cwd=checkout, env=env),
              "git commit of the review map")  # fmt: skip
        head = _git("rev-parse", "HEAD", cwd=checkout)
        _must(head, "git rev-parse")
        gate_base = head.output.decode().strip()
    marker = work / "bases" / f"{spec.key[:24]}.json"
    marker.write_text(json.dumps({"gate_base": gate_base}) + "\n", encoding="utf-8")
    return gate_base


def _scaffold(checkout: Path, python: str) -> list[str]:
    """Run ``patchlane init`` in the checkout; return the paths it wrote (relative)."""
    argv = [python, "-m", "patchlane", "--repo", os.fspath(checkout), "--json", "init"]
    with tempfile.TemporaryDirectory(prefix="patchlane-init-") as tmp:
        errors = Path(tmp) / "stderr"
        ran = _run(argv, cwd=checkout, timeout_s=INIT_TIMEOUT_S, errors=errors)
        if ran.code != 0 or ran.timed_out:
            said = errors.read_bytes()[-64 * 1024 :]
            raise SetupFailed(_Ran(ran.code, ran.timed_out, said).why("patchlane init"))
    try:
        report = json.loads(ran.output.decode("utf-8"))
        paths = [str(item["path"]) for item in report["wrote"]]
    except (ValueError, KeyError, TypeError) as e:
        raise SetupFailed(f"patchlane init: unreadable report ({e})") from e
    return [p for p in paths if not Path(p).is_absolute()] or [MAP_FILE]


def _record_map(checkout: Path, python: str, gate_base: str, work: Path) -> None:
    """Record the base's dependency map into the machine's map cache (found there when
    an earlier preparation recorded it). A suite that cannot be recorded is not a set-up
    failure (the gates then do without the map, as ``gate`` does); a recording killed or
    past its time is."""
    argv = [python, "-m", "patchlane", "--repo", os.fspath(checkout), "-q", "replay", "map",
            "--base", gate_base, "--dep-cache", os.fspath(work / "maps"),
            "--timeout", str(MAP_TIMEOUT_S)]  # fmt: skip
    ran = _run(argv, cwd=checkout, timeout_s=MAP_TIMEOUT_S + 120.0)
    if ran.timed_out or ran.code < 0:
        raise SetupFailed(ran.why("patchlane replay map"))


def gate_pair(prepared: Prepared, pair: Pair, plan: RunPlan) -> PairResult:
    """Gate ``pair`` against the prepared base in a child ``patchlane triage`` (its own
    process group, killed past ``plan.pair_timeout_s``).

    Returns the ``PairResult``: the child's one row (its ``name``, ``source`` and
    ``evidence`` rewritten to the pair's) and its evidence folder as an uncompressed tar;
    a child killed, timed out or that wrote no row gives an ``infra`` result. Never raises
    for anything the patch or the child does."""
    start = time.monotonic()
    pairs = Path(plan.work_dir).absolute() / "pairs"
    try:
        pairs.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=pairs, prefix=f"{pair.key[:12]}-") as tmp:
            return _gate_in(Path(tmp), prepared, pair, plan, start)
    except OSError as e:
        return _lost(pair, f"the gate could not run: {e.strerror or e}", start)


def _gate_in(tmp: Path, prepared: Prepared, pair: Pair, plan: RunPlan, start: float) -> PairResult:
    diff = tmp / "patch.diff"
    diff.write_bytes(pair.patch)
    out = tmp / "out"
    work = Path(plan.work_dir).absolute()
    argv = [prepared.python, "-m", "patchlane", "--repo", prepared.checkout, "--json",
            "triage", "--base", prepared.gate_base, "--dep-map", "auto",
            "--dep-cache", os.fspath(work / "maps"), "--out-dir", os.fspath(out),
            *plan.gate_argv, os.fspath(diff)]  # fmt: skip
    ran = _run(argv, cwd=Path(prepared.checkout), timeout_s=plan.pair_timeout_s, output=tmp / "log")
    if ran.timed_out:
        return _lost(pair, f"the gate ran past {plan.pair_timeout_s:g} s and was killed", start)
    if ran.code < 0:
        return _lost(pair, f"the gate was killed by {_signal_name(-ran.code)}", start)
    row = _one_row(out / "triage.jsonl")
    if row is None:
        return _lost(pair, ran.why("the gate") + " without writing its row", start)
    folder = row.get("evidence")
    evidence = _tar(out / folder) if isinstance(folder, str) and folder else b""
    # The diff's file is this throwaway folder's: a reason names the prediction instead.
    reason = str(row.get("reason") or "").replace(os.fspath(diff), pair.source)
    row.update(
        name=pair.name,
        source=pair.source,
        reason=reason,
        evidence=pair.name if evidence else None,
    )
    return PairResult(
        key=pair.key,
        instance_id=pair.instance_id,
        model=pair.model,
        name=pair.name,
        verdict=str(row.get("verdict")),
        exit_code=code if isinstance(code := row.get("exit_code"), int) else ran.code,
        reason=reason,
        infra=False,
        attempts=1,
        seconds=time.monotonic() - start,
        row=json.dumps(row, ensure_ascii=False, allow_nan=False),
        evidence=evidence,
    )


def _lost(pair: Pair, why: str, start: float) -> PairResult:
    """``pair``'s infrastructure result on a first attempt begun at ``start``."""
    return infra_result(pair, why, 1, time.monotonic() - start)


def _one_row(path: Path) -> dict[str, object] | None:
    """The one row of a child's ``triage.jsonl``, ``None`` when there is not exactly one."""
    try:
        # "\n" only, as ``ledger.read_ledger``: a row may hold U+2028 and the like.
        lines = [x for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]
        row = json.loads(lines[0]) if len(lines) == 1 else None
    except (OSError, ValueError):
        return None
    return row if isinstance(row, dict) and isinstance(row.get("verdict"), str) else None


def _tar(folder: Path) -> bytes:
    """The regular files and folders below ``folder`` as an uncompressed tar, names
    relative to it; links and other special files are left out (the driver unpacks it)."""
    buffer = io.BytesIO()
    if not folder.is_dir() or folder.is_symlink():
        return b""
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            here = Path(root)
            for name in [*dirs, *sorted(files)]:
                path = here / name
                if path.is_symlink() or not (path.is_file() or path.is_dir()):
                    continue
                tar.add(path, arcname=path.relative_to(folder).as_posix(), recursive=False)
    return buffer.getvalue()
