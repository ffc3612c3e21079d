"""pytest plugin: skip exactly the in-play, passing freezes of a shipped freeze report.

``replay run`` skips only node ids that the shipped freeze report lists as in play and passing
(docs/architecture.md §4, "Replay slice"). This plugin is how: given
``--patchlane-freeze-report=FILE`` it adds a skip marker to each collected item whose node id is
*exactly* one of those node ids, and records what it skipped (``--patchlane-skip-record=FILE``,
and one line per skip in the terminal summary).

It is registered as a ``pytest11`` entry point, so pytest loads it in every run of an environment
where patchlane is installed, including runs that have nothing to do with patchlane. Hence:

- module level imports only the standard library: the replay runner imports ``skip_reason``
  without paying for pytest, and an unrelated pytest run pays for nothing of patchlane's;
- nothing happens unless ``--patchlane-freeze-report`` is given (a report file lying around is
  never read on its own); then the freeze lane's own reader
  (``patchlane.formats.freeze_report``, which imports only small patchlane modules) reads it,
  before the repository's code is imported.

It is also how a replay's test process gets its job (docs/explanation/decisions/0031-plain-run.md):
patchlane starts ``python -m pytest`` exactly as the project runs it, no argument and no variable of
its own, with a socket as stdin that begins with ``JOB_MAGIC``. At import this module looks at fd 0
only when it is a socket, and only with a non-blocking, non-consuming peek: a plain run's stdin is
never read. With the header there, it takes the job, puts ``/dev/null`` on fd 0 and hands the job to
``patchlane.child.replay_run``, which registers its plugins on the plugin manager importing this
module (before any conftest, before the options are parsed). This module keeps nothing of the
job: its names and what its functions hold are the same in a plain run and in the replay.

A report that is not strictly well formed is a usage error (pytest exit code 4) naming the file:
the report decides what a host may leave unrun, so a doubtful one grants nothing rather than
something. A report whose ``status`` is not ``pass`` grants nothing either: a red freeze audit
cannot excuse a test.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pytest is only ever imported lazily (see the module docstring)
    import pytest

REPORT_OPTION = "--patchlane-freeze-report"
RECORD_OPTION = "--patchlane-skip-record"

# The name the per-session plugin object is registered under (one per pytest Config).
_SESSION_PLUGIN = "patchlane-freeze-skip"


@dataclass(frozen=True)
class FreezeGrant:
    """What one freeze report allows pytest to skip.

    ``label`` is the report path as the caller named it, ``sha256`` the hex digest of the exact
    bytes that were parsed, ``status`` the report's status and ``allowed`` maps each node id that
    may be skipped to its ``(freeze id, expires)``. ``allowed`` is empty unless ``status`` is
    ``pass``.
    """

    label: str
    sha256: str
    status: str
    allowed: Mapping[str, tuple[str, str]]


def skip_reason(freeze_id: str, expires: str) -> str:
    """Return the skip reason the plugin gives a frozen test (the freeze id and its expiry)."""
    return f"patchlane freeze {freeze_id} (expires {expires})"


def load_freeze_grant(report_path: Path, label: str | None = None) -> FreezeGrant:
    """Read and strictly check a freeze report (the freeze lane's reader); return what it
    grants.

    ``label`` names the file in messages and in the grant (default: ``str(report_path)``).
    Raises ``ReportError`` with one line, ``FILE[:LINE]: what is wrong``, when the file cannot
    be read, is not strict JSON (duplicate keys included), or is not a well-formed freeze report.
    """
    # Project modules are imported here, not at module level: see the module docstring.
    from patchlane.errors import ReportError
    from patchlane.formats.freeze_report import parse_freeze_report
    from patchlane.inputs.jsonio import read_file_bytes

    name = str(report_path) if label is None else label
    data = read_file_bytes(report_path, name, ReportError)
    report = parse_freeze_report(data, name)
    return FreezeGrant(
        label=name,
        sha256=hashlib.sha256(data).hexdigest(),
        status=report.status.value,
        allowed=report.granted(),
    )


# --- a replay's job, taken at import ---------------------------------------------------------

# ``patchlane.infra.process.JOB_MAGIC``: not imported from there (this module stays cheap).
JOB_MAGIC = b"\x00patchlane-job\x01"
_JOB_LIMIT = 1 << 30


def take_job(fd: int = 0) -> dict[str, Any] | None:
    """Return the replay job waiting on ``fd`` and put ``/dev/null`` there, or ``None``
    (``fd`` untouched, nothing read) when ``fd`` is not a socket that starts with
    ``JOB_MAGIC`` right now. Raises nothing: a job that cannot be read whole is ``None``
    after ``fd`` was replaced (the run then reports nothing, which the parent fails)."""
    # Only a replay's test process has a job: a plain run does not pay for these.
    import json
    import socket

    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return None
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        return None
    with sock:
        header_size = len(JOB_MAGIC) + 8
        try:
            head = sock.recv(header_size, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except OSError:
            return None
        if not head.startswith(JOB_MAGIC) or len(head) < header_size:
            return None
        data = bytearray()
        try:
            sock.settimeout(None)
            _recv_exactly(sock, header_size)
            size = int.from_bytes(head[len(JOB_MAGIC) :], "big")
            if size <= _JOB_LIMIT:
                data = _recv_exactly(sock, size)
        except OSError:
            data = bytearray()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, fd)
    os.close(null)
    try:
        job = json.loads(data.decode("utf-8")) if data else None
    except ValueError:
        return None
    return job if isinstance(job, dict) else None


def _recv_exactly(sock: Any, size: int) -> bytearray:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise OSError("the job ended early")
        data += chunk
    return data


def _start_replay() -> None:
    """In a replay's test process (a job on stdin): set its run up and register its plugins
    on the plugin manager that is importing this module. Nothing of the run is kept in this
    module: its names, and what its functions hold, are those of a plain run's (the
    fingerprint compares them)."""
    job = take_job()
    if job is None:
        return
    before = frozenset(sys.modules)
    from patchlane.child.replay_run import attach, start

    attach(start(job), before)  # type: ignore[arg-type]  # checked where it is read


# Plugins load before any conftest or test module: the run is set up here, before the
# project's code, from patchlane's own modules only.
_start_replay()


# --- the pytest hooks --------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the two options; both default to off."""
    group = parser.getgroup("patchlane", "patchlane freeze skips")
    group.addoption(
        REPORT_OPTION,
        dest="patchlane_freeze_report",
        metavar="FILE",
        default=None,
        help="skip exactly the node ids that this freeze-report.json lists as in play and ok "
        "(nothing when its status is not 'pass'). Off unless given.",
    )
    group.addoption(
        RECORD_OPTION,
        dest="patchlane_skip_record",
        metavar="FILE",
        default=None,
        help=f"write what {REPORT_OPTION} skipped to FILE as JSON (atomically).",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Read the freeze report, if one is given, and register the per-session skipper."""
    report = config.getoption("patchlane_freeze_report")
    record = config.getoption("patchlane_skip_record")
    if report is None and record is None:
        return  # the common case: pytest runs that never asked for patchlane
    import pytest

    if report is None:
        # A record with nothing to record would look like "skipped nothing" evidence.
        raise pytest.UsageError(f"{RECORD_OPTION} needs {REPORT_OPTION}")
    # Relative paths are relative to where pytest was invoked, not to its rootdir.
    base = config.invocation_params.dir
    from patchlane.errors import ReportError

    try:
        grant = load_freeze_grant(base / report, report)
    except ReportError as e:
        raise pytest.UsageError(f"{REPORT_OPTION}: {e}") from None
    record_to = None if record is None else (base / record, record)
    if record_to is not None and record_to[0].is_dir():
        raise pytest.UsageError(f"{RECORD_OPTION}: {record} is a directory")
    # A plugin object per Config, never module state: pytester and pytest.main() may run several
    # sessions in one process, each with its own report.
    config.pluginmanager.register(_FreezeSkipper(grant, record_to), _SESSION_PLUGIN)


class _FreezeSkipper:
    """Per-session hooks: mark the granted items, then record which of them pytest skipped."""

    def __init__(self, grant: FreezeGrant, record_to: tuple[Path, str] | None) -> None:
        self.grant = grant
        self.record_to = record_to  # (where to write the skip record, its name as given)
        self.marked: dict[str, str] = {}  # node id -> the skip reason this plugin gave it
        self.collected: set[str] = set()  # node ids of the items the session was to run
        self.skipped: set[str] = set()  # node ids pytest reported skipped for our reason

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Mark each item whose node id is exactly a granted one: no prefix, sibling or class."""
        import pytest

        for item in items:
            grant = self.grant.allowed.get(item.nodeid)
            if grant is not None:
                reason = skip_reason(*grant)
                item.add_marker(pytest.mark.skip(reason=reason))
                self.marked[item.nodeid] = reason

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Note the final item list (after every plugin's deselection) for ``not_collected``."""
        self.collected = {item.nodeid for item in session.items}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count a skip only when pytest reports it with our reason.

        A test's own skip mark is evaluated before ours and wins; a run stopped early (``-x``)
        never reaches some marked items. Neither is something this plugin skipped.
        """
        reason = self.marked.get(report.nodeid)
        if reason is None or report.when != "setup" or not report.skipped:
            return
        longrepr = report.longrepr
        if isinstance(longrepr, tuple) and longrepr[2] == f"Skipped: {reason}":
            self.skipped.add(report.nodeid)

    def record(self) -> dict[str, Any]:
        """The skip record: sorted, so the same run gives the same bytes."""
        allowed = self.grant.allowed
        return {
            "freeze_report": self.grant.label,
            "freeze_report_sha256": self.grant.sha256,
            "skipped": [
                {"nodeid": nodeid, "freeze_id": allowed[nodeid][0], "expires": allowed[nodeid][1]}
                for nodeid in sorted(self.skipped)
            ],
            "not_collected": sorted(set(allowed) - self.collected),
        }

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write the skip record, atomically, when asked for one."""
        if self.record_to is None:
            return
        import pytest

        from patchlane.errors import InputError
        from patchlane.inputs.jsonio import atomic_write_text, dumps_report

        path, name = self.record_to
        try:
            atomic_write_text(path, dumps_report(self.record()))
        except InputError as e:
            # A run whose record is missing must not look like a clean run.
            pytest.exit(
                f"{RECORD_OPTION}: {name}: {e.message}", returncode=pytest.ExitCode.USAGE_ERROR
            )

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """One line per skip, one per granted node id not collected, and a red report's refusal."""
        terminalreporter.section("patchlane freeze", sep="-")
        write = terminalreporter.write_line
        grant = self.grant
        if grant.status != "pass":
            write(
                f"patchlane freeze: {grant.label} has status {grant.status!r}, not 'pass': "
                "a red freeze audit grants nothing, nothing was skipped"
            )
            return
        for nodeid in sorted(self.skipped):
            freeze_id, expires = grant.allowed[nodeid]
            write(f"patchlane freeze: skipped {nodeid} (freeze {freeze_id}, expires {expires})")
        for nodeid in sorted(set(grant.allowed) - self.collected):
            write(f"patchlane freeze: not collected {nodeid} (granted, not in this run)")
