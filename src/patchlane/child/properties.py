"""The child process that imports one property module version and runs its properties.

Started by the parent (``lane``) as ``python -s -P -B -X utf8 -m
patchlane.child.properties`` in a minimal environment; reads its job (JSON) from stdin.
Everything it needs of its own (json, hashlib, random, ``patchlane.props``, Hypothesis when
the module names it, the oracle audit) is imported *before* the repository's roots go on
``sys.path``, so that a file in the repository cannot shadow it; then the audit hook of
``guard`` is installed, ``integrity`` takes its snapshot of the objects properties rely
on, and only then is the property module imported.

Code under test runs in this process and may rebind those objects (``random.Random.random
= ...``, ``hashlib.sha256 = ...``, ``builtins.all = ...``, this module's ``Writer.emit``).
Right before each result is written (after the import, and after each property), the
``integrity`` check compares them with the snapshot and puts the captured ones back: a
rebinding fails the property (``sandbox: tampered: <names>``), and one made while the module
was imported fails every property of that module version, which then do not run. The
property module's own names are checked the same way, against its source, which the child
reads and compiles before importing it (``integrity.plan``/``check_module``): code under
test can reach that module's globals through the frames of its import.

Results go to the file descriptor the job names, one JSON line per property, each carrying
the job's token, then ``{"done": true, "count": N}``; stdout and stderr belong to the code
under test and are never read as results. The child ends with ``os._exit(0)`` right after
the ``done`` line, so that no ``atexit`` handler or thread of the code under test runs after
it.

Modes: ``run`` runs the properties; ``audit`` (a second child, after a property passed on
the head) records which project functions a property calls and hands it to
``patchlane.child.oracle_audit.audit.audit_property``; ``import`` only imports the module and
says which package was missing, if one was (the parent's check that a missing package
fails the base as well, before it blames the environment rather than the patch).

A failure to import carries ``missing``: the top-level name a ``ModuleNotFoundError`` could
not find. It is a hint for the parent, which checks it itself; never a verdict.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib  # noqa: F401 - imported before the repository is importable (see above)
import importlib
import json
import math
import os
import random  # noqa: F401 - imported before the repository is importable (see above)
import sys
import time
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from patchlane import props  # noqa: F401 - imported before the repository is importable
from patchlane.child import asserts, integrity, reads, styles
from patchlane.child import guard as sandbox
from patchlane.child.messages import AuditError, AuditFindings, Job, RunFailed, RunResult
from patchlane.infra.bytecode import SourceOnlyLoader, import_tree_from_source

_TEST_DIRS = frozenset({"tests", "test"})
# The run that records which project functions a property calls is profiled (every Python
# call goes through a callback, several times slower): it runs this many cases, not all.
PROBE_CASES = 20
# The check ``integrity.watch`` returns: the names rebound since the snapshot.
Verify = Callable[[], list[str]]


class Writer:
    """Writes result lines to the result descriptor, each stamped with the job's token.

    ``tail``, when set, returns the record of what the run read (``reads``), written as
    the last line before ``done``.
    """

    def __init__(self, fd: int, token: str) -> None:
        self._fd = fd
        self._token = token
        self.tail: Callable[[], object] | None = None

    def emit(self, record: Mapping[str, object]) -> None:
        """Write one record as one JSON line (ASCII, no NaN)."""
        line = json.dumps(
            {"token": self._token, **record},
            ensure_ascii=True,
            allow_nan=False,
            separators=(",", ":"),
        )
        data = (line + "\n").encode("ascii")
        while data:
            written = os.write(self._fd, data)
            data = data[written:]


def pinned_settings(cases: int) -> Any:
    """Return patchlane's Hypothesis settings for ``cases`` examples.

    Built from Hypothesis's built-in default profile before any property module is
    imported, so that a profile the module registers or loads (or ``CI=true``) changes
    nothing: seeded by the lane, ``max_examples = cases``, no database, no deadline, no
    health check, one bug, and the phases that search and shrink (no ``explain``, which
    only annotates).
    """
    from hypothesis import HealthCheck, Phase, Verbosity, settings

    return settings(
        parent=settings.get_profile("default"),
        max_examples=cases,
        database=None,
        deadline=None,
        derandomize=False,
        print_blob=False,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
        verbosity=Verbosity.quiet,
    )


def _prepare_hypothesis(job: Job) -> tuple[Any, Any]:
    """Return the pinned settings for a full run and for the audit's probe run (or
    ``(None, None)`` when the module does not use Hypothesis or it is not installed)."""
    if not job.get("hypothesis"):
        return None, None
    try:
        import hypothesis.configuration
    except ImportError:
        return None, None
    # Hypothesis caches data under its home directory (./.hypothesis by default): the
    # child's own empty HOME instead of the tree under test.
    hypothesis.configuration.set_hypothesis_home_dir(Path(job["home"]) / ".hypothesis")
    cases = int(job["cases"])
    return pinned_settings(cases), pinned_settings(min(cases, PROBE_CASES))


def _oracle(job: Job) -> Any:
    if job["mode"] != "audit":
        return None
    try:
        from patchlane.child.oracle_audit import audit as oracle
    except ImportError:
        return None
    return oracle


def _preload() -> None:
    """Import what ordinary code imports without using (see ``guard``): after the hook,
    importing ``ctypes`` would need a ``dlopen`` and ``subprocess`` its fork module."""
    import subprocess  # noqa: F401

    with contextlib.suppress(ImportError):
        import ctypes  # noqa: F401


def main() -> None:
    """Run the job read from stdin; always ends the process (``os._exit``)."""
    job: Job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    _preload()
    writer = Writer(int(job.pop("result_fd")), str(job.pop("token")))
    pinned, pinned_probe = _prepare_hypothesis(job)
    oracle = _oracle(job)
    if job.get("tests"):
        # Imported now, before the repository is importable (see the module's docstring).
        from patchlane.child import pytests  # noqa: F401
    violations: list[str] = []
    sandbox.install(violations, job.get("guarded", ()))
    # Materialised trees hold no bytecode; a work tree (``patchlane property`` without
    # ``--base``/``--head``) may, and a sourceless ``.pyc`` would import as is.
    for tree in job["trees"]:
        import_tree_from_source(Path(tree))
    if job.get("record"):
        # Before the snapshot, which then guards the recorder's wrappers of ``os``.
        recorder = reads.Recorder()
        recorder.install()
        writer.tail = recorder.result
    # Last, when everything the child needs is imported and nothing of the repository is
    # yet: what every later check compares with. Held in a local, which no rebinding of a
    # module attribute reaches.
    asserts.install()  # before the snapshot, which then guards it
    snapshot = integrity.take(integrity.watched_modules())
    verify: Verify = functools.partial(integrity.verify, snapshot)
    # What the property module's source binds, read before anything of it runs.
    checks = _plan(job)
    # The module's asserts show their operands' values when they fail (``asserts``).
    SourceOnlyLoader.compilers[str(job["expect_file"])] = asserts.compile_source
    sys.path[:0] = job["paths"]
    os.chdir(job["cwd"])
    names: list[str] = list(job["names"])
    start = time.perf_counter()
    try:
        module = importlib.import_module(job["module"])
    except BaseException as e:  # noqa: BLE001 - SystemExit at import is a failure too
        message = "import failed: " + styles.describe(e, job["trees"])
        missing = missing_package(e)
        # Checked right before anything is written: describing the exception ran code
        # under test too, and json or Writer may be what it rebound.
        tampered = verify()
        if job["mode"] == "import":
            _imported(writer, names, missing, message, start)
        if tampered:
            message = f"{integrity.describe(tampered, 'during import')}; {message}"
        kind = "sandbox" if tampered else "error"
        _refuse_all(writer, job, names, kind, message, missing)
    at_import = sandbox.take(violations)
    elsewhere = _loaded_elsewhere(module, job)
    tampered = verify()
    if job["mode"] == "import":
        _imported(writer, names, None, elsewhere, start)
    if elsewhere is None and checks is not None:
        # The property module's own names, against its source (and after each property).
        found, state = integrity.check_module(checks, module, snapshot)
        tampered += found
        verify = functools.partial(
            integrity.both, verify, functools.partial(integrity.verify_module, state)
        )
    if tampered:
        _refuse_all(writer, job, names, "sandbox", integrity.describe(tampered, "during import"))
    if elsewhere is not None:
        _refuse_all(writer, job, names, "module", elsewhere)
    if job["mode"] == "audit":
        _audit(job, module, names, writer, oracle, violations, (pinned, pinned_probe), verify)
    else:
        for name in names:
            writer.emit(_run_one(job, module, name, pinned, violations, at_import, verify))
    _finish(writer, len(names))


def _plan(job: Job) -> integrity.Plan | None:
    """Return the ``integrity.Plan`` of the job's property module, from the file the job
    expects it to load from (``_loaded_elsewhere`` refuses any other), or ``None`` when it
    cannot be read or is not checked."""
    file = Path(job["expect_file"])
    name = str(job["module"])
    package = name if file.name == "__init__.py" else name.rpartition(".")[0]
    try:
        source = file.read_bytes()
    except OSError:
        return None
    return integrity.plan(source, os.fspath(file), name, package, asserts.compile_source)


def _loaded_elsewhere(module: types.ModuleType, job: Job) -> str | None:
    """Return why ``module`` is not the module version the job asked for, or ``None``."""
    loaded = getattr(module, "__file__", None)
    if isinstance(loaded, str) and os.path.realpath(loaded) == job["expect_file"]:
        return None
    # Another file answered the import (a package added in front of the base's, a module
    # already imported under that name): its properties are not the ones asked for.
    shown = styles.relative(loaded, job["trees"]) if isinstance(loaded, str) else "no file"
    return f"importing {job['module']} loaded {shown}, not the module version asked for"


def _refuse_all(
    writer: Writer,
    job: Job,
    names: list[str],
    kind: str,
    message: str,
    missing: str | None = None,
) -> NoReturn:
    """End a ``run`` or ``audit`` job whose properties cannot run: each fails (an audit
    records an error) with ``message``."""
    for name in names:
        if job["mode"] == "audit":
            writer.emit({"property": name, "audit": {"error": message}, "seconds": 0.0})
        else:
            writer.emit(_failed(name, "unknown", kind, None, None, message, 0.0, missing))
    _finish(writer, len(names))


def missing_package(exc: BaseException) -> str | None:
    """Return the top-level name of the module a ``ModuleNotFoundError`` could not find
    (``numpy`` for ``numpy.linalg``), or ``None`` for any other exception."""
    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if not isinstance(name, str) or not name:
        return None
    return name.split(".")[0]


def _imported(
    writer: Writer, names: list[str], missing: str | None, message: str | None, start: float
) -> NoReturn:
    """End an ``import`` job: one record saying whether the module imported (``message``
    ``None``) or which package was missing, then ``done``."""
    seconds = time.perf_counter() - start
    for name in names:
        writer.emit({"property": name, "missing": missing, "message": message, "seconds": seconds})
    _finish(writer, len(names))


def _finish(writer: Writer, count: int) -> NoReturn:
    if writer.tail is not None:
        writer.emit({"reads": writer.tail()})
    writer.emit({"done": True, "count": count})
    for stream in (sys.stdout, sys.stderr):
        # The code under test may have closed or replaced them.
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _failed(
    name: str,
    style: str,
    kind: str,
    case_index: int | None,
    arguments: Any,
    message: str,
    seconds: float,
    missing: str | None = None,
) -> RunFailed:
    return {
        "property": name,
        "style": style,
        "outcome": "fail",
        "kind": kind,
        "case_index": case_index,
        "arguments": styles.json_safe(arguments),
        "message": message,
        "missing": missing,
        "seconds": seconds,
    }


def _run_one(
    job: Job,
    module: types.ModuleType,
    name: str,
    pinned: Any,
    violations: list[str],
    at_import: list[str],
    verify: Verify,
) -> RunResult:
    """Return the result record of property ``name``: its run judged, then the integrity
    check (last: describing a failure calls the code under test's ``__str__``/``__repr__``
    too); a rebinding turns any outcome into a ``sandbox`` failure."""
    record = _run_record(job, module, name, pinned, violations, at_import)
    tampered = verify()
    if not tampered:
        return record
    message = integrity.describe(tampered)
    if record["outcome"] == "fail":
        message += f"; the property failed too: {record['message']}"
    if len(message) > styles.MESSAGE_LIMIT:
        message = message[: styles.MESSAGE_LIMIT - 3] + "..."
    return {**record, "outcome": "fail", "kind": "sandbox", "message": message, "missing": None}


def _run_record(
    job: Job,
    module: types.ModuleType,
    name: str,
    pinned: Any,
    violations: list[str],
    at_import: list[str],
) -> RunResult:
    start = time.perf_counter()
    if name not in vars(module) and not job.get("tests"):
        message = f"{name} is in the module's source but not defined after import"
        return _failed(name, "unknown", "error", None, None, message, 0.0)
    prepared = _prepare(job, module, name, pinned)
    if prepared.refused is not None:
        return _failed(name, prepared.style, "error", None, None, prepared.refused, 0.0)
    failure: styles.CaseFailure | None = None
    try:
        prepared()
    except BaseException as e:  # noqa: BLE001 - any exception is this property's failure
        failure = prepared.failure(e)
    seconds = time.perf_counter() - start
    blocked = at_import + sandbox.take(violations)
    if blocked:
        # Blocked network or process access fails the property even when the code caught
        # the exception and carried on: it must never pass silently.
        when = "during import: " if at_import else ""
        more = f" (and {len(blocked) - 1} more)" if len(blocked) > 1 else ""
        message = f"blocked by the sandbox {when}{blocked[0]}{more}"
        if failure is not None and "SandboxViolation" not in failure.message:
            message += f"; the property then failed: {failure.message}"
        case_index = failure.case_index if failure else None
        arguments = failure.arguments if failure else None
        return _failed(name, prepared.style, "sandbox", case_index, arguments, message, seconds)
    if failure is not None:
        return _failed(
            name,
            prepared.style,
            failure.kind,
            failure.case_index,
            failure.arguments,
            failure.message,
            seconds,
        )
    return {
        "property": name,
        "style": prepared.style,
        "outcome": "pass",
        "kind": None,
        "case_index": None,
        "arguments": None,
        "message": None,
        "missing": None,
        "seconds": seconds,
    }


def _prepare(
    job: Job,
    module: types.ModuleType,
    name: str,
    pinned: Any,
    cases: int | None = None,
) -> styles.Prepared:
    if job.get("tests"):
        # A test the map names, by its node id (``pytests``): always a Hypothesis test.
        from patchlane.child import pytests

        roots = job["trees"]
        return pytests.prepare_test(name, module, seed=int(job["seed"]), pinned=pinned, roots=roots)
    return styles.prepare(
        name,
        vars(module)[name],
        seed=int(job["seed"]),
        cases=int(job["cases"]) if cases is None else cases,
        case=job.get("case"),
        pinned=pinned,
        roots=job["trees"],
    )


def _audit(
    job: Job,
    module: types.ModuleType,
    names: list[str],
    writer: Writer,
    oracle: Any,
    violations: list[str],
    pinned: tuple[Any, Any],
    verify: Verify,
) -> None:
    budgets: dict[str, float] = job["per_mutant_timeout_s"]
    probe_cases = min(int(job["cases"]), PROBE_CASES)
    # The audit's time budget covers all of this module's properties: mutants not begun by
    # then are not tried (the report counts the ones that were).
    deadline = time.monotonic() + float(job.get("budget_s", math.inf))
    for name in names:
        start = time.perf_counter()
        record: AuditFindings | AuditError
        if oracle is None:
            record = {"error": "not available"}
        elif name not in vars(module):
            record = {"error": f"{name} is not defined after import"}
        elif time.monotonic() >= deadline:
            record = {"error": "not audited: the audit's time budget ran out"}
        else:
            prepared = _prepare(job, module, name, pinned[0])
            probe = _prepare(job, module, name, pinned[1], probe_cases)
            record = _audit_one(job, prepared, probe, oracle, budgets.get(name, 1.0), deadline)
        sandbox.take(violations)
        tampered = verify()
        if tampered:
            # The findings of a run whose objects were rebound are not believed.
            record = {"error": integrity.describe(tampered)}
        writer.emit({"property": name, "audit": record, "seconds": time.perf_counter() - start})


def _audit_one(
    job: Job,
    prepared: styles.Prepared,
    probe: styles.Prepared,
    oracle: Any,
    per_mutant_timeout_s: float,
    deadline: float,
) -> AuditFindings | AuditError:
    try:
        called = collect_called(probe, job["project_root"], job["exclude"])
    except BaseException as e:  # noqa: BLE001 - the property failed on this run
        return {"error": "the property failed while recording its calls: " + str(e)[:500]}
    try:
        result = oracle.audit_property(
            prepared,
            called,
            mutants_limit=int(job["mutants"]),
            per_mutant_timeout_s=per_mutant_timeout_s,
            deadline=deadline,
        )
        findings = [[str(kind), str(detail)] for kind, detail in result.findings]
        return {"findings": findings, "mutants": int(result.mutants), "killed": int(result.killed)}
    except BaseException as e:  # noqa: BLE001 - an audit failure is reported, never fatal
        return {"error": styles.describe(e, job["trees"])}


def collect_called(
    prepared: styles.Prepared, project_root: str, exclude: Sequence[str]
) -> list[types.FunctionType]:
    """Run ``prepared`` once under ``sys.setprofile`` (``Prepared.run_profiled``) and
    return the project functions it called: Python functions defined in a file under ``project_root`` that is neither in
    ``exclude`` (the property packages) nor a test file. In first-call order.

    Raises what the property raises.
    """
    seen: dict[types.CodeType, None] = {}

    def profiler(frame: types.FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            seen.setdefault(frame.f_code)

    prepared.run_profiled(profiler)
    root = styles.dir_prefix(project_root)
    excluded = tuple(styles.dir_prefix(e) if Path(e).is_dir() else e for e in exclude)
    out: list[types.FunctionType] = []
    for code in seen:
        filename = code.co_filename
        if not filename.startswith(root) or filename.startswith(excluded):
            continue
        if _is_test_file(filename[len(root) :]):
            continue
        functions = [
            r
            for r in gc.get_referrers(code)
            if isinstance(r, types.FunctionType) and r.__code__ is code
        ]
        functions.sort(key=lambda f: (f.__module__ or "", f.__qualname__))
        out.extend(f for f in functions if f not in out)
    return out


def _is_test_file(rel: str) -> bool:
    parts = rel.replace(os.sep, "/").split("/")
    name = parts[-1]
    return (
        any(p in _TEST_DIRS for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


if __name__ == "__main__":
    try:
        main()
    except BaseException as e:  # noqa: BLE001 - a broken child must exit non-zero, loudly
        sys.stderr.write(f"patchlane property child: {type(e).__name__}: {e}\n")
        sys.stderr.flush()
        os._exit(70)
