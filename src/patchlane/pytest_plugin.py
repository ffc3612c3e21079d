"""pytest plugin: skip exactly the in-play, passing freezes of a shipped freeze report.

DESIGN.md §4 ("Replay slice"): ``replay run`` skips only node ids that the shipped freeze report
lists as in play and passing. This plugin is how: given ``--patchlane-freeze-report=FILE`` it adds
a skip marker to each collected item whose node id is *exactly* one of those node ids, and records
what it skipped (``--patchlane-skip-record=FILE``, and one line per skip in the terminal summary).

It is registered as a ``pytest11`` entry point, so pytest loads it in every run of an environment
where patchlane is installed, including runs that have nothing to do with patchlane. Hence:

- module level imports only the standard library: the replay runner imports ``allowed_skips``
  without paying for pytest, and an unrelated pytest run pays for nothing of patchlane's;
- nothing happens unless ``--patchlane-freeze-report`` is given (a report file lying around is
  never read on its own).

A report that is not strictly well formed is a usage error (pytest exit code 4) naming the file:
the report decides what a host may leave unrun, so a doubtful one grants nothing rather than
something. A report whose ``status`` is not ``pass`` grants nothing either: a red freeze audit
cannot excuse a test.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pytest is only ever imported lazily (see the module docstring)
    import pytest

REPORT_OPTION = "--patchlane-freeze-report"
RECORD_OPTION = "--patchlane-skip-record"

# The name the per-session plugin object is registered under (one per pytest Config).
_SESSION_PLUGIN = "patchlane-freeze-skip"
_STATUSES = ("pass", "fail", "not_applicable", "error")
_RULES = range(1, 7)  # DESIGN.md §4 numbers the audit rules 1-6
_NOT_IN_PLAY_RULE = 5  # "a record that fails only rule 5 is not in play"
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
_REQUIRED_TOP = ("lane", "status", "reason", "records")
_REQUIRED_RECORD = ("id", "nodeid", "expires", "in_play", "ok", "failed_rules")

JsonPath = tuple[str | int, ...]


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


def allowed_skips(report_path: Path) -> dict[str, tuple[str, str]]:
    """Return the node ids a freeze report allows to skip: ``{nodeid: (freeze id, expires)}``.

    Exactly the records that are in play and ok, and only when the report's status is ``pass``
    (a red audit grants nothing). This is the same set the pytest plugin skips from. Raises
    ``ValueError`` with a one-line message naming the file when the report is malformed.
    """
    return dict(load_freeze_grant(report_path).allowed)


def load_freeze_grant(report_path: Path, label: str | None = None) -> FreezeGrant:
    """Read and strictly check a freeze report; return what it grants.

    ``label`` names the file in messages and in the grant (default: ``str(report_path)``).
    Raises ``ValueError`` with one line, ``FILE[:LINE]: what is wrong``, when the file cannot be
    read, is not strict JSON (duplicate keys included), or is not a well-formed freeze report.
    """
    # Project modules are imported here, not at module level: see the module docstring.
    from patchlane.errors import InputError
    from patchlane.inputs.jsonio import line_for, parse_json_text

    name = str(report_path) if label is None else label
    try:
        data = report_path.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"{name}: no such file") from None
    except OSError as e:
        raise ValueError(f"{name}: cannot read: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{name}: not UTF-8 (byte {e.start})") from None
    try:
        value = parse_json_text(text, name)
    except InputError as e:
        raise ValueError(str(e)) from None
    try:
        status, allowed = _check_report(value)
    except _Malformed as e:
        # The line is found by a second, position-recording pass: paid only on bad input.
        line = line_for(text, e.where)
        where = name if line is None else f"{name}:{line}"
        raise ValueError(f"{where}: {e.message}") from None
    return FreezeGrant(
        label=name,
        sha256=hashlib.sha256(data).hexdigest(),
        status=status,
        allowed=allowed if status == "pass" else {},
    )


# --- strict checking ---------------------------------------------------------------------------


class _Malformed(Exception):
    """The report is well-formed JSON but not a well-formed freeze report."""

    def __init__(self, where: JsonPath, message: str) -> None:
        super().__init__(message)
        self.where = where
        self.message = message


def _show(value: Any) -> str:
    """Render a JSON value for a one-line message: JSON text, ASCII, cut short."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 40 else text[:37] + "..."


def _text(value: Any, where: JsonPath, what: str) -> str:
    """A non-empty string of printable characters (it ends up on one terminal line)."""
    if not isinstance(value, str) or not value or not value.isprintable():
        raise _Malformed(where, f"{what} must be a non-empty one-line string, not {_show(value)}")
    return value


def _date(value: Any, where: JsonPath, what: str) -> str:
    """A real calendar date written YYYY-MM-DD."""
    if isinstance(value, str) and _DATE.match(value):
        try:
            date.fromisoformat(value)
        except ValueError:
            pass
        else:
            return value
    raise _Malformed(where, f"{what} must be a date YYYY-MM-DD, not {_show(value)}")


def _check_report(value: Any) -> tuple[str, dict[str, tuple[str, str]]]:
    """Check the report's shape and inner consistency.

    Returns ``(status, in-play-and-ok node ids)``; the caller withholds them unless the status
    is ``pass``. Raises ``_Malformed`` at the first problem.
    """
    if not isinstance(value, dict):
        raise _Malformed((), f"a freeze report must be a JSON object, not {_show(value)}")
    for key in _REQUIRED_TOP:
        if key not in value:
            raise _Malformed((), f"missing key {key!r}")
    if value["lane"] != "freeze":
        raise _Malformed(("lane",), f"'lane' must be \"freeze\", not {_show(value['lane'])}")
    status = value["status"]
    if status not in _STATUSES:
        raise _Malformed(
            ("status",), f"'status' must be one of {', '.join(_STATUSES)}, not {_show(status)}"
        )
    if not isinstance(value["reason"], str):
        raise _Malformed(("reason",), f"'reason' must be a string, not {_show(value['reason'])}")
    if "today" in value:
        _date(value["today"], ("today",), "'today'")
    records = value["records"]
    if not isinstance(records, list):
        raise _Malformed(("records",), f"'records' must be a list, not {_show(records)}")

    allowed: dict[str, tuple[str, str]] = {}
    seen_ids: set[str] = set()
    for index, record in enumerate(records):
        freeze_id, nodeid, expires = _check_record(record, ("records", index), status)
        if freeze_id in seen_ids:
            raise _Malformed(("records", index, "id"), f"freeze id {freeze_id!r} appears twice")
        seen_ids.add(freeze_id)
        if expires is None:
            continue  # not in play and ok: grants nothing
        if nodeid in allowed:
            # Two passing freezes of one test: the skip could name either, so neither is trusted.
            raise _Malformed(
                ("records", index, "nodeid"),
                f"node id {nodeid!r} is granted by two records ({allowed[nodeid][0]!r}, {freeze_id!r})",
            )
        allowed[nodeid] = (freeze_id, expires)

    if "skippable" in value:
        _check_skippable(value["skippable"], allowed)
    return status, allowed


def _check_record(record: Any, where: JsonPath, status: str) -> tuple[str, str, str | None]:
    """Check one record; return ``(id, nodeid, expires if it grants a skip else None)``.

    A record grants a skip when it is in play and ok; such a record must carry an expiry.
    """
    if not isinstance(record, dict):
        raise _Malformed(where, f"a record must be a JSON object, not {_show(record)}")
    for key in _REQUIRED_RECORD:
        if key not in record:
            raise _Malformed(where, f"record is missing key {key!r}")
    freeze_id = _text(record["id"], (*where, "id"), "'id'")
    nodeid = _text(record["nodeid"], (*where, "nodeid"), f"record {freeze_id!r}: 'nodeid'")
    label = f"record {freeze_id!r}"
    if "owner" in record and not isinstance(record["owner"], str):
        raise _Malformed((*where, "owner"), f"{label}: 'owner' must be a string")
    if "details" in record and not isinstance(record["details"], dict):
        raise _Malformed((*where, "details"), f"{label}: 'details' must be an object")
    expires = record["expires"]
    if expires is not None:
        expires = _date(expires, (*where, "expires"), f"{label}: 'expires' (or null)")
    in_play, ok = record["in_play"], record["ok"]
    for key, flag in (("in_play", in_play), ("ok", ok)):
        if not isinstance(flag, bool):
            raise _Malformed((*where, key), f"{label}: {key!r} must be true or false")
    rules = record["failed_rules"]
    if (
        not isinstance(rules, list)
        # bool is an int in Python, but true is not a rule number.
        or not all(isinstance(r, int) and not isinstance(r, bool) and r in _RULES for r in rules)
        or len(set(rules)) != len(rules)
    ):
        raise _Malformed(
            (*where, "failed_rules"),
            f"{label}: 'failed_rules' must be a list of distinct rule numbers 1-6, not {_show(rules)}",
        )
    # DESIGN.md §4 defines "in play" as "rule 5 holds", and an in-play record as passing when
    # no rule fails. A report that contradicts itself is not believed either way.
    if in_play == (_NOT_IN_PLAY_RULE in rules):
        raise _Malformed(
            (*where, "in_play"),
            f"{label}: 'in_play' is {_show(in_play)} but 'failed_rules' is {_show(rules)} (in play means rule 5 holds)",
        )
    if in_play and ok == bool(rules):
        raise _Malformed(
            (*where, "ok"),
            f"{label}: 'ok' is {_show(ok)} but 'failed_rules' is {_show(rules)}",
        )
    if status == "pass" and in_play and not ok:
        raise _Malformed(
            (*where, "ok"),
            f"{label} is in play and fails rules {_show(rules)}, yet 'status' is \"pass\"",
        )
    if not (in_play and ok):
        return freeze_id, nodeid, None
    if expires is None:
        raise _Malformed((*where, "expires"), f"{label} is in play and ok but has no 'expires'")
    return freeze_id, nodeid, expires


def _check_skippable(skippable: Any, allowed: Mapping[str, tuple[str, str]]) -> None:
    """``skippable`` must name exactly the in-play, ok records' node ids, each once."""
    if not isinstance(skippable, list) or not all(isinstance(n, str) for n in skippable):
        raise _Malformed(
            ("skippable",), f"'skippable' must be a list of node ids, not {_show(skippable)}"
        )
    if len(set(skippable)) != len(skippable):
        raise _Malformed(("skippable",), "'skippable' lists a node id twice")
    for index, nodeid in enumerate(skippable):
        if nodeid not in allowed:
            raise _Malformed(
                ("skippable", index),
                f"'skippable' lists {nodeid!r}, which no in-play, ok record names",
            )
    missing = sorted(set(allowed) - set(skippable))
    if missing:
        raise _Malformed(
            ("skippable",), f"'skippable' omits {missing[0]!r}, which an in-play, ok record names"
        )


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
    try:
        grant = load_freeze_grant(base / report, report)
    except ValueError as e:
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
