"""``patchlane init``: scaffold a review map, an empty freeze registry and fixture locks.

What it finds decides what it writes, and what it cannot find it leaves out with a comment
rather than guessing: a property lane needs a property module (``checks.props``) that a
person wrote, so without one the lane is described in a comment instead of pointing at a
module that does not exist. Every file is rendered and validated before the first is
written, and nothing existing is overwritten without ``--force``.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from patchlane.commands.init_given import find_given_test_files, given_lines
from patchlane.commands.init_given import note as given_note
from patchlane.commands.init_layout import (
    DEFAULT_CASES,
    DEFAULT_SEED,
    find_code_paths,
    find_test_roots,
    next_command,
    say_next,
)
from patchlane.errors import Exit, UsageError
from patchlane.infra.ui import write_stdout
from patchlane.inputs.paths import path_problem, symlink_on_way, to_fs

if TYPE_CHECKING:
    from patchlane.main import Context

PROPERTY_MODULE = "checks.props"
REGISTRY = "tests/flaky-freeze.yml"
FIXTURES_PARENT = "tests/fixtures"
LOCK_NAME = "LOCK.json"
INIT_REASON = "initial lock by patchlane init"
MAX_AGE_DAYS = 14

REGISTRY_TEXT = """\
# Freeze registry, scaffolded by patchlane init. Empty: no test assertion is frozen.
# A freeze lets ONE named, flaky test assertion be skipped in the replay slice until it
# expires; it never switches off a property or the fixture lock. Each record:
#   - id: "billing-clock-skew"            # short unique name
#     nodeid: "tests/test_x.py::test_y"   # the pytest node id of one test (never a property)
#     owner: "qa-rotation"                # who answers for it
#     reason: "why the assertion is unstable, one line"
#     expires: "YYYY-MM-DD"               # at most max_age_days after the review date
#     required_properties:                # must still pass; never empty
#       - prop_name
#     fixture_lock: "tests/fixtures/NAME/LOCK.json"   # its fixture check must pass
#     failure_log: {ref: "...", sha256: "..."}        # optional: the log behind 'expires'
# 'patchlane freeze audit' checks every record; the base branch's registry decides.
freezes: []
"""


class WrittenFile(TypedDict):
    """One file ``init`` wrote, as ``--json`` lists it: a lock says how many ``files`` it
    hashed."""

    path: str
    kind: str
    files: NotRequired[int]


@dataclass(frozen=True)
class Plan:
    """What ``init`` will write: repo-relative (or absolute, for ``--map``) targets and text."""

    map_target: Path
    map_label: str
    map_text: str
    registry: str
    property_paths: tuple[str, ...]
    property_module: str | None
    fixture_roots: tuple[str, ...]
    notes: tuple[str, ...]
    # Test files with Hypothesis (@given) tests, proposed as ``lanes.property.tests``.
    property_tests: tuple[str, ...] = ()

    def locks(self) -> tuple[str, ...]:
        """Return the repo-relative lock path of each fixture root."""
        return tuple(root + LOCK_NAME for root in self.fixture_roots)


def register(sub: Any, name: str, help_text: str, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        name,
        help=help_text,
        parents=parents,
        description="Scaffold review-map.yml (property paths from the packages and modules "
        "in src/, else at the top level, with a seed and a case count the gate defaults to; "
        "fixture roots from --fixtures or tests/fixtures/*/), "
        f"an empty freeze registry ({REGISTRY}) and a LOCK.json for each fixture root, in an "
        "existing git repository, and print the gate command to run next once the scaffold "
        "is committed on the current branch (it passes --base only when that branch is not "
        "the one the gate defaults to). Refuses to overwrite an existing file (exit 2) "
        "unless --force.",
    )
    p.add_argument(
        "--fixtures",
        action="append",
        metavar="DIR",
        default=None,
        help="a fixture root to lock (repeatable; default: every tests/fixtures/*/ directory)",
    )
    p.add_argument("--force", action="store_true", help="overwrite files that already exist")


def run(args: argparse.Namespace, ctx: Context) -> int:
    from patchlane.infra.ui import show
    from patchlane.inputs.jsonio import atomic_write_text, dumps_report
    from patchlane.lanes.fixture.lane import write_locks
    from patchlane.project.classify import map_path_in_repo
    from patchlane.project.config import parse_review_map

    repo = ctx.repo()
    rel, outside = map_path_in_repo(repo, ctx.map_option)
    map_target = outside if outside is not None else to_fs(repo, rel or "")
    map_label = rel if rel is not None else os.fspath(map_target)
    plan = make_plan(repo, map_target, map_label, args.fixtures)

    targets = [
        map_target,
        to_fs(repo, plan.registry),
        *(to_fs(repo, lock) for lock in plan.locks()),
    ]
    # Even with --force, never write through a symlink: it could point out of the repo.
    for rel_target in (*([rel] if rel is not None else []), plan.registry, *plan.locks()):
        link = symlink_on_way(repo, rel_target)
        if link is not None:
            raise UsageError(f"{show(link)}: is a symlink; init never writes through one")
    existing = [t for t in targets if os.path.lexists(t)]
    if existing and not args.force:
        names = ", ".join(show(_label(repo, t)) for t in existing)
        raise UsageError(f"{names}: already exists; not overwritten (use --force to replace)")

    # Validate what we are about to write with the same parser every command uses, so a
    # scaffold can never produce a map that patchlane itself refuses.
    review_map = parse_review_map(plan.map_text, plan.map_label)

    wrote: list[WrittenFile] = []
    # Locks first and the map last: if hashing fails (an unreadable or symlinked fixture),
    # no map points at locks that do not exist.
    if review_map.fixture is not None:
        for lock, count in write_locks(repo, review_map.fixture, INIT_REASON):
            wrote.append({"path": lock, "kind": "fixture lock", "files": count})
    atomic_write_text(to_fs(repo, plan.registry), REGISTRY_TEXT)
    wrote.append({"path": plan.registry, "kind": "freeze registry"})
    atomic_write_text(map_target, plan.map_text)
    wrote.append({"path": plan.map_label, "kind": "review map"})

    if ctx.out.json:
        data = {
            "repo": os.fspath(repo),
            "wrote": wrote,
            # null when the lane was left out (it is then a comment in the map).
            "property": (
                {
                    "paths": list(plan.property_paths),
                    "module": plan.property_module,
                    **({"tests": list(plan.property_tests)} if plan.property_tests else {}),
                }
                if review_map.property is not None
                else None
            ),
            "fixture_roots": list(plan.fixture_roots),
            "notes": list(plan.notes),
            # The gate command the human output's next: line prints (a shell line).
            "next": next_command(repo, review_map.property is not None)[1],
        }
        write_stdout(dumps_report(data))
        return Exit.GREEN
    for item in wrote:
        extra = f" ({item['files']} file(s) hashed)" if "files" in item else ""
        ctx.out.say(f"wrote {show(item['path'])}: {item['kind']}{extra}")
    for note in plan.notes:
        ctx.out.say(f"note: {note}")
    say_next(ctx.out, repo, plan.map_label, review_map.property is not None)
    return Exit.GREEN


def _label(repo: Path, target: Path) -> str:
    try:
        return target.relative_to(repo).as_posix()
    except ValueError:
        return os.fspath(target)


def _is_real_dir(path: Path) -> bool:
    # lstat, not is_dir(): a symlinked directory could point out of the repository, and
    # nothing in patchlane follows a symlink out of a root.
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _checked_rel(rel: str, what: str) -> str:
    problem = path_problem(rel)
    if problem is not None:
        raise UsageError(f"{what}: {problem}")
    if not rel.isprintable() or any(0xDC80 <= ord(c) <= 0xDCFF for c in rel):
        raise UsageError(f"{what}: {rel!a} cannot be written into a review map; rename it")
    return rel


def find_src_packages(repo: Path) -> tuple[str, ...]:
    """Return ``src/NAME/`` for every package directory (one with ``__init__.py``) in ``src/``."""
    src = repo / "src"
    if not _is_real_dir(src):
        return ()
    found = []
    for child in sorted(src.iterdir(), key=lambda p: p.name):
        if _is_real_dir(child) and (child / "__init__.py").is_file() and child.name.isidentifier():
            found.append(f"src/{child.name}/")
    return tuple(found)


def find_property_module(repo: Path, module: str = PROPERTY_MODULE) -> str | None:
    """Return the repo-relative file of ``module`` at the repo root or in ``src/``, or ``None``.

    These are the roots the property lane puts on ``sys.path`` by default.
    """
    parts = module.split(".")
    for root in ("", "src/"):
        for candidate in ("/".join(parts) + ".py", "/".join(parts) + "/__init__.py"):
            path = repo / (root + candidate)
            if path.is_file() and not path.is_symlink():
                return root + candidate
    return None


def find_fixture_roots(repo: Path) -> tuple[str, ...]:
    """Return ``tests/fixtures/NAME/`` for every real directory in ``tests/fixtures/``."""
    parent = repo / FIXTURES_PARENT
    if not _is_real_dir(parent):
        return ()
    roots = []
    for child in sorted(parent.iterdir(), key=lambda p: p.name):
        if _is_real_dir(child):
            roots.append(_checked_rel(f"{FIXTURES_PARENT}/{child.name}/", os.fspath(child)))
    return tuple(roots)


def fixture_root_from_option(repo: Path, option: str) -> str:
    """Return the repo-relative root (ending in ``/``) for a ``--fixtures DIR`` option.

    ``DIR`` is relative to the current directory, like every path on the command line.
    Raises ``UsageError`` when it is outside the repository, not a directory, or a symlink.
    """
    given = Path(option)
    # The cwd is resolved (it is a real directory) but DIR itself is not: resolving it
    # would follow a symlinked fixture root, which must be refused instead.
    absolute = Path(
        os.path.normpath(given if given.is_absolute() else Path.cwd().resolve() / given)
    )
    rel: Path | None = None
    for top in (repo, repo.resolve()):
        try:
            rel = absolute.relative_to(top)
            break
        except ValueError:
            continue
    if rel is None:
        raise UsageError(f"--fixtures {option}: not inside the repository {repo}")
    if rel == Path():
        raise UsageError(f"--fixtures {option}: the repository root cannot be a fixture root")
    posix = rel.as_posix()
    link = symlink_on_way(repo, posix)
    if link is not None:
        raise UsageError(
            f"--fixtures {option}: {link} is a symlink; a fixture root must be a real directory"
        )
    if not _is_real_dir(absolute):
        raise UsageError(f"--fixtures {option}: not a directory")
    return _checked_rel(posix + "/", f"--fixtures {option}")


def make_plan(repo: Path, map_target: Path, map_label: str, fixtures: list[str] | None) -> Plan:
    """Decide what ``init`` writes for ``repo``. Raises ``UsageError`` for a bad ``--fixtures``."""
    notes: list[str] = []
    packages = find_code_paths(repo, PROPERTY_MODULE.split(".")[0])
    module_file = find_property_module(repo)
    tests = find_given_test_files(repo)
    if fixtures:
        roots = tuple(dict.fromkeys(fixture_root_from_option(repo, f) for f in fixtures))
        for a in roots:
            for b in roots:
                if a != b and b.startswith(a):
                    raise UsageError(f"--fixtures: {b} lies inside {a}; give each root once")
    else:
        roots = find_fixture_roots(repo)

    if tests:
        notes.append(given_note(tests, bool(packages)))
    if module_file is None and not (tests and packages):
        notes.append(
            f"no property module {PROPERTY_MODULE} found (checks/props.py or src/checks/props.py): "
            "the property lane is left out; write one and uncomment the lane in the map"
            + (
                f" (until then a patch to {', '.join(packages)} is undecided: map incomplete)"
                if packages
                else ""
            )
        )
    elif not packages:
        notes.append(
            "no package or module found (in src/ or at the top level): the property lane "
            "is left out; add its paths to the map"
        )
    if ".patchlane" not in _read_text(repo / ".gitignore"):
        notes.append(
            "'patchlane gate' writes its evidence into .patchlane/ by default: "
            "add .patchlane/ to .gitignore"
        )
    if not roots:
        notes.append(
            f"no fixture root ({FIXTURES_PARENT}/*/ or --fixtures DIR): "
            "the fixture lane is left out"
        )
    test_roots = find_test_roots(repo)
    if test_roots != ("tests/",) and test_roots != ("test/",):
        notes.append(
            f"the tests live inside the package: replay.tests is {', '.join(test_roots)} "
            "(its modules are source, its test folders the suite)"
        )
    text = render_map(packages, module_file, roots, tests, test_roots)
    return Plan(
        map_target=map_target,
        map_label=map_label,
        map_text=text,
        registry=REGISTRY,
        property_paths=packages,
        property_module=PROPERTY_MODULE if module_file is not None and packages else None,
        fixture_roots=roots,
        notes=tuple(notes),
        property_tests=tests,
    )


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _q(text: str) -> str:
    # A JSON string is a valid YAML double-quoted scalar, escapes included.
    return json.dumps(text)


def _flow(items: tuple[str, ...]) -> str:
    return "[" + ", ".join(_q(i) for i in items) + "]"


def _lane_tail(indent: str, tests: tuple[str, ...]) -> list[str]:
    # The defaults of --seed and --cases (docs/architecture.md §4): the gate needs neither
    # flag. Then the @given test files, if any.
    return [
        f"{indent}seed: {DEFAULT_SEED}  # default for --seed (the replay's too)",
        f"{indent}cases: {DEFAULT_CASES}  # default for --cases",
        *given_lines(tests, indent),
    ]


def render_map(
    packages: tuple[str, ...],
    module_file: str | None,
    roots: tuple[str, ...],
    tests: tuple[str, ...] = (),
    test_roots: tuple[str, ...] = ("tests/",),
) -> str:
    """Return the text of the scaffolded review map (loads with ``parse_review_map``).

    ``packages`` are the property paths, ``module_file`` the file of ``checks.props`` (or
    ``None``: the lane is then only described in a comment), ``roots`` the fixture roots,
    ``tests`` the test files with ``@given`` tests (they make the lane, module or not),
    ``test_roots`` the ``replay.tests`` roots (``init_layout.find_test_roots``)."""
    has_module = module_file is not None
    lines = [
        "# review-map.yml, scaffolded by patchlane init: edit per repository.",
        "# The base branch's copy decides for every patch; a patch that edits this file is",
        "# listed as a control-plane change and still judged by the base's map.",
        "version: 1",
        "lanes:",
    ]
    if (has_module or tests) and packages:
        if has_module:
            lines += [
                f"  # Properties live in {module_file}: functions prop_NAME(seed, n) run with a",
                "  # pinned seed and case count against the patched code.",
            ]
        lines += ["  property:", f"    paths: {_flow(packages)}"]
        if has_module:
            lines.append(f"    module: {_q(PROPERTY_MODULE)}")
        lines += _lane_tail("    ", tests)
    else:
        why = (
            f"no module {PROPERTY_MODULE} was found"
            if not has_module
            else "no package or module was found"
        )
        example_paths = _flow(packages) if packages else '["PACKAGE/"]'
        lines += [
            f"  # property lane left out: {why}.",
            "  # Write deterministic property functions prop_NAME(seed: int, n: int = 200)",
            "  # in checks/props.py (they call the code under test and assert its contract),",
            "  # then uncomment:",
            "  # property:",
            f"  #   paths: {example_paths}",
            f"  #   module: {_q(PROPERTY_MODULE)}",
            *_lane_tail("  #   ", tests),
        ]
    if len(roots) == 1:
        lines += [
            "  fixture:",
            f"    paths: {_flow(roots)}",
            f"    lock: {_q(roots[0] + LOCK_NAME)}",
        ]
    elif roots:
        lines += ["  fixture:", "    roots:"]
        for root in roots:
            lines += [f"      - path: {_q(root)}", f"        lock: {_q(root + LOCK_NAME)}"]
    else:
        lines += [
            "  # fixture lane left out: no fixture directory was found. For one, add:",
            "  # fixture:",
            '  #   paths: ["tests/fixtures/NAME/"]',
            '  #   lock: "tests/fixtures/NAME/LOCK.json"',
            '  # and run: patchlane fixture lock --reason "initial lock"',
        ]
    lines += [
        "  freeze:",
        f"    registry: {_q(REGISTRY)}",
        f"    max_age_days: {MAX_AGE_DAYS}",
        "  replay:",
        f"    tests: {_flow(test_roots)}",
        "    # compiled code (C, Cython, Rust): the command that builds it in place",
        '    # build: "python setup.py build_ext --inplace"',
        "# Paths no lane needs, each with a one-line reason; an unmapped change is undecided:",
        "# ignore:",
        '#   - path: "docs/"',
        '#     reason: "prose only"',
    ]
    return "\n".join(lines) + "\n"
