"""``patchlane check``: validate the control files at rest, for pre-commit hooks and CI.

The review map, the freeze registry and every fixture lock are parsed by the same strict
readers the lanes use, and every problem found is kept (not only the first): each file's
first structural error, every bad freeze record, every lock. Then the checks that need no
lane report: the freeze audit's rules 1 and 2, and whether rules 3 and 4 could ever hold
(each required property is a ``prop_*`` of a property module, found by parsing the source
as the property lane does; each record's ``fixture_lock`` is a lock of the map). Last,
unless asked not to, the fixture bytes are compared with their locks (the fixture lane's
own check). Rules 5 and 6 need the patch and the registry's history: ``freeze audit`` and
the gate apply them.

In the work tree a clean check starts no process: the repository, the map, the registry,
the locks and the property modules are read from the filesystem, and the fixture lane asks
git only about ``.gitattributes`` on the way of the fixtures. ``--rev`` reads everything
from a commit through git instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from patchlane.errors import InputError, LockError, MapError
from patchlane.inputs.committed import decode_utf8, read_committed_text
from patchlane.inputs.paths import symlink_on_way, to_fs
from patchlane.lanes.fixture.commit_tree import way_of
from patchlane.lanes.fixture.lane import FixtureReport, check_commit, check_worktree
from patchlane.lanes.fixture.lockfile import covers, parse_lock_bytes
from patchlane.lanes.fixture.locks import read_commit_lock, read_worktree_lock
from patchlane.lanes.freeze.audit import rule_expiry, rule_properties_listed
from patchlane.lanes.freeze.registry import FreezeRecord, RegistryError, read_registry
from patchlane.lanes.property.discover import find_module_file, property_names, search_roots
from patchlane.project.classify import map_path_in_repo
from patchlane.project.config import DEFAULT_MAP, FixtureLane, ReviewMap, parse_review_map

# A problem's kind: bad input (exit 2) or a red finding in valid input (exit 1).
INPUT = "input"
RED = "red"


@dataclass(frozen=True)
class Problem:
    """One thing wrong, in one file (and at one line, where there is one)."""

    file: str
    line: int | None
    message: str
    kind: str  # INPUT or RED

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.message}"

    @classmethod
    def of(cls, error: InputError) -> Problem:
        """The bad-input problem an ``InputError`` reports."""
        return cls(error.file, error.line, error.message, INPUT)

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "message": self.message, "kind": self.kind}


@dataclass(frozen=True)
class CheckResult:
    """What ``check`` found: the files it read (with what each is), every problem, notes
    (things shown that fail nothing), and the fixture report when bytes were compared."""

    source: str  # "worktree" or "commit"
    commit: str | None
    checked: tuple[tuple[str, str], ...]
    problems: tuple[Problem, ...]
    notes: tuple[str, ...] = ()
    fixture: FixtureReport | None = None

    @property
    def status(self) -> str:
        """``error`` (some input is bad), ``fail`` (a red finding) or ``pass``."""
        kinds = {p.kind for p in self.problems}
        return "error" if INPUT in kinds else "fail" if RED in kinds else "pass"

    def to_json(self) -> dict[str, object]:
        return {
            "command": "check",
            "status": self.status,
            "source": self.source,
            "commit": self.commit,
            "checked": [{"file": f, "what": w} for f, w in self.checked],
            "problems": [p.to_json() for p in self.problems],
            "notes": list(self.notes),
            "fixture": None if self.fixture is None else self.fixture.to_json(),
        }


@dataclass(frozen=True)
class _Source:
    """Where files are read: the work tree (``commit`` is ``None``) or a commit."""

    repo: Path
    commit: str | None

    def text(self, rel: str, error: type[InputError]) -> str | None:
        """Return the text of the regular file ``rel``, ``None`` when absent. Raises
        ``error`` for a link on the way (never followed), another kind of file, or bytes
        that are not UTF-8."""
        if self.commit is not None:
            where = f"(in commit {self.commit[:12]})"
            return read_committed_text(self.repo, self.commit, rel, error, where)
        link = symlink_on_way(self.repo, rel)
        if link is not None:
            where = "it is a symlink" if link == rel else f"{link!r} is a symlink"
            raise error(rel, f"{where}: never read through a symlink")
        path = to_fs(self.repo, rel)
        try:
            if not path.is_file():
                if path.exists():
                    raise error(rel, "not a regular file")
                return None
            data = path.read_bytes()
        except OSError as e:
            raise error(rel, f"cannot read: {e.strerror}") from e
        return decode_utf8(data, rel, error)


@dataclass
class _Found:
    """What a check collects as it goes (a builder; the result is frozen)."""

    checked: list[tuple[str, str]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check(
    repo: Path,
    map_option: str | None,
    *,
    today: date,
    commit: str | None = None,
    fixtures: bool = True,
    use_cache: bool = True,
) -> CheckResult:
    """Validate the review map, the freeze registry and every lock of ``repo``'s work tree
    (or of ``commit``, a full commit id), and with ``fixtures`` compare the fixture bytes
    with their locks. Returns every problem found; raises only ``GitError`` (git cannot
    read ``commit``) and ``UsageError``."""
    source = _Source(repo, commit)
    found = _Found()
    review_map = _review_map(source, map_option, found)
    report: FixtureReport | None = None
    if review_map is not None:
        locks_ok = _locks(source, review_map.fixture, found)
        records = _registry(source, review_map, today, found)
        if commit is None:
            names = _property_names(repo, review_map, found)
            if names is not None and records:
                _required_properties(review_map, records, names, found)
            elif records and review_map.property is not None and review_map.property.tests:
                found.notes.append(
                    "required properties not checked: the property lane also runs pytest "
                    "tests (lanes.property.tests), known only when collected"
                )
        if review_map.fixture is not None and fixtures:
            if locks_ok:
                report = _fixture_bytes(source, review_map.fixture, use_cache, found)
            else:
                found.notes.append("fixture bytes not compared: a lock cannot be read")
    return CheckResult(
        source="worktree" if commit is None else "commit",
        commit=commit,
        checked=tuple(found.checked),
        # By file and line, each file's problems in the order they were found.
        problems=tuple(sorted(found.problems, key=lambda p: (p.file, p.line or 0))),
        notes=tuple(found.notes),
        fixture=report,
    )


def _review_map(source: _Source, map_option: str | None, found: _Found) -> ReviewMap | None:
    """Read and parse the review map; ``None`` (with the problem kept) when it cannot be."""
    rel, outside = map_path_in_repo(source.repo, map_option)
    try:
        if outside is not None:  # a file of the user's, outside the repository
            label = os.fspath(outside)
            try:
                text: str | None = decode_utf8(outside.read_bytes(), label, MapError)
            except FileNotFoundError:
                text = None
            except OSError as e:
                raise MapError(label, f"cannot read: {e.strerror}") from e
        else:
            label = rel or DEFAULT_MAP
            text = source.text(label, MapError)
        if text is None:
            raise MapError(label, "no such file (run 'patchlane init' to scaffold one)")
        review_map = parse_review_map(text, label)
    except MapError as e:
        found.problems.append(Problem.of(e))
        return None
    found.checked.append((label, "review map"))
    return review_map


def _locks(source: _Source, lane: FixtureLane | None, found: _Found) -> bool:
    """Parse every lock of the fixture lane; return whether all of them are sound."""
    if lane is None:
        return True
    on_way: dict[str, str] = {}
    if source.commit is not None:
        on_way = way_of(source.repo, source.commit, lane.locks).problems
    ok = True
    for root in lane.roots:
        try:
            if source.commit is None:
                data = read_worktree_lock(source.repo, root.lock)
            else:
                data = read_commit_lock(source.repo, source.commit, root.lock, on_way)
            if data is None:
                raise LockError(
                    root.lock, "no such file (write it with: patchlane fixture lock --reason '...')"
                )
            lock = parse_lock_bytes(data, root.lock, root, locks=lane.locks)
        except LockError as e:
            found.problems.append(Problem.of(e))
            ok = False
            continue
        found.checked.append((root.lock, f"fixture lock ({len(lock.expected)} files)"))
    return ok


def _registry(
    source: _Source, review_map: ReviewMap, today: date, found: _Found
) -> tuple[FreezeRecord, ...]:
    """Parse the freeze registry record by record, then apply to each valid record the
    audit's rules that need no report. Returns the valid records."""
    lane = review_map.freeze
    if lane is None:
        return ()
    try:
        text = source.text(lane.registry, RegistryError)
        if text is None:
            found.notes.append(f"{lane.registry}: no freeze registry: nothing is frozen")
            return ()
        records, problems = read_registry(text, lane.registry, review_map)
    except RegistryError as e:
        found.problems.append(Problem.of(e))
        return ()
    found.problems.extend(Problem.of(p) for p in problems)
    found.checked.append((lane.registry, f"freeze registry ({len(records)} valid records)"))
    for record in records:
        found.problems.extend(_record_findings(record, review_map, today, lane.registry))
    return records


def _record_findings(
    record: FreezeRecord, review_map: ReviewMap, today: date, registry: str
) -> list[Problem]:
    """The audit's rules 1 and 2 on one record, and rule 4's lock: each a red problem at
    the record's line."""
    assert review_map.freeze is not None  # noqa: S101 - the caller read the registry it names
    out = []
    verdicts = (
        (1, rule_expiry(record, today, review_map.freeze.max_age_days)),
        (2, rule_properties_listed(record)),
    )
    for number, (holds, why) in verdicts:
        if not holds:
            out.append(Problem(registry, record.line, f"{record.id}: rule {number}: {why}", RED))
    locks = review_map.fixture.locks if review_map.fixture is not None else ()
    if record.fixture_lock is not None and record.fixture_lock not in locks:
        known = ", ".join(locks) or "the map has no fixture lane"
        why = f"fixture_lock {record.fixture_lock} is not a lock of the map ({known})"
        out.append(Problem(registry, record.line, f"{record.id}: rule 4 cannot hold: {why}", RED))
    return out


def _property_names(
    repo: Path, review_map: ReviewMap, found: _Found
) -> set[tuple[str, str]] | None:
    """Find and parse each property module of the work tree (without running it); return
    its ``(module, prop_name)`` pairs, or ``None`` when a module is missing or unparsable
    (then the names cannot be known: the problem is kept)."""
    lane = review_map.property
    names: set[tuple[str, str]] = set()
    complete = True
    if lane is not None:
        roots = search_roots(repo, lane)
        for module in lane.modules:
            file = find_module_file(module, roots)
            if file is None:
                where = ", ".join(_rel(repo, r) or "." for r in roots)
                message = f"property module {module!r} not found (searched {where})"
                found.problems.append(Problem(review_map.label, lane.modules_line, message, INPUT))
                complete = False
                continue
            label = _rel(repo, file)
            try:
                text = decode_utf8(file.read_bytes(), label, InputError)
                props = property_names(text, label)
                names.update((module, n) for n in props)
                found.checked.append((label, f"property module ({len(props)} properties)"))
            except InputError as e:
                found.problems.append(Problem.of(e))
                complete = False
            except (OSError, SyntaxError) as e:
                line = getattr(e, "lineno", None)
                why = getattr(e, "msg", None) or getattr(e, "strerror", None) or str(e)
                found.problems.append(Problem(label, line, f"cannot be parsed: {why}", INPUT))
                complete = False
    if lane is not None and lane.tests:
        # Tests run as properties are known only once pytest collects them (which runs the
        # repository's conftest files): their names cannot be checked here.
        return None
    return names if complete else None


def _required_properties(
    review_map: ReviewMap,
    records: tuple[FreezeRecord, ...],
    names: set[tuple[str, str]],
    found: _Found,
) -> None:
    """Each record's required properties must be properties (``prop`` or ``module.prop``)
    the map's property modules define, or rule 3 can never hold."""
    lane = review_map.freeze
    assert lane is not None  # noqa: S101 - records come from the registry it names
    modules = ", ".join(sorted({m for m, _ in names})) or "the map has no property module"
    for record in records:
        for name in record.required_properties:
            module, _, prop = name.rpartition(".")
            if not any(p == prop and (not module or m == module) for m, p in names):
                why = f"{name} is not a property of the map's property modules ({modules})"
                found.problems.append(
                    Problem(
                        lane.registry, record.line, f"{record.id}: rule 3 cannot hold: {why}", RED
                    )
                )


def _fixture_bytes(
    source: _Source, lane: FixtureLane, use_cache: bool, found: _Found
) -> FixtureReport | None:
    """Compare the fixture bytes with their locks (the fixture lane's check); every path
    that differs is a red problem naming the file."""
    try:
        if source.commit is None:
            report = check_worktree(source.repo, lane, use_cache=use_cache)
        else:
            report = check_commit(source.repo, source.commit, lane)
    except InputError as e:
        found.problems.append(Problem.of(e))
        return None
    found.problems.extend(fixture_problems(report, lane))
    found.notes.extend(report.review_events)
    return report


def fixture_problems(report: FixtureReport, lane: FixtureLane) -> list[Problem]:
    """One red problem per fixture path that differs from its lock, named by its path."""

    def lock_of(path: str) -> str:
        return ", ".join(r.lock for r in lane.roots if covers(r.paths)(path)) or "its lock"

    hint = "if intended, run: patchlane fixture lock --reason '...'"
    out = [
        Problem(p, None, f"changed: its SHA-256 differs from {lock_of(p)} ({hint})", RED)
        for p in report.changed
    ]
    out += [
        Problem(p, None, f"missing: listed in {lock_of(p)} ({hint})", RED) for p in report.missing
    ]
    out += [
        Problem(p, None, f"extra: not listed in {lock_of(p)} ({hint})", RED) for p in report.extra
    ]
    out += [Problem(u.path, None, f"unsafe: {u.problem}", RED) for u in report.unsafe]
    out += [
        Problem(a, None, f"differs from {b!r} only in case", RED) for a, b in report.case_collisions
    ]
    out += [Problem(e.lock, None, e.problem, RED) for e in report.lock_errors]
    return out


def _rel(repo: Path, path: Path) -> str:
    """``path`` relative to the repository when it lies inside, else as given."""
    try:
        return path.relative_to(repo).as_posix()
    except ValueError:
        return os.fspath(path)


__all__ = ["INPUT", "RED", "CheckResult", "Problem", "check", "fixture_problems"]
