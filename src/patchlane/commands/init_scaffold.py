"""``patchlane init``'s work, once its options are parsed (``init`` registers them): survey
the repository, run the candidate properties once, render and validate every file, then
write them. ``init`` imports this module only when the command runs, so that
``patchlane init --help`` loads none of what the survey needs (YAML, git, the property
lane's child helpers).
"""

from __future__ import annotations

import argparse
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict

from patchlane.commands.init_given import find_given_test_files
from patchlane.commands.init_layout import (
    DEFAULT_CASES,
    DEFAULT_SEED,
    find_code_paths,
    next_command,
    say_next,
)
from patchlane.commands.init_map import LOCK_NAME, MapContent, render
from patchlane.commands.init_prose import (
    Ignore,
    append_evidence_rule,
    evidence_ignored,
    find_prose,
    find_tooling,
    gitignore_to_append,
)
from patchlane.commands.init_roots import find_test_roots, registry_folder
from patchlane.commands.init_trial import Adopted, adopt
from patchlane.errors import Exit, UsageError
from patchlane.infra.ui import show, write_stdout
from patchlane.inputs.jsonio import atomic_write_text, dumps_report
from patchlane.inputs.paths import path_problem, symlink_on_way, to_fs
from patchlane.lanes.fixture.lane import write_locks
from patchlane.project.classify import map_path_in_repo
from patchlane.project.config import parse_review_map

if TYPE_CHECKING:
    from patchlane.infra.ui import Output
    from patchlane.main import Context

PROPERTY_MODULE = "checks.props"
REGISTRY_NAME = "flaky-freeze.yml"
FIXTURES_PARENT = "tests/fixtures"
INIT_REASON = "initial lock by patchlane init"
HOW_TO_ADD = (
    "to add properties later, write prop_NAME(seed, n) functions in checks/props.py (or "
    "Hypothesis @given tests), add a property lane for that code and take its paths out of "
    "lanes.replay.paths (docs/how-to/properties.md)"
)

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
#     fixture_lock: "tests/fixtures/billing/LOCK.json"   # its fixture check must pass
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
class Survey:
    """What ``init`` found before running anything: the code's paths, the property module's
    file (``None``: none), the test files with ``@given`` tests, the fixture roots, the
    replay's test roots, the registry's path and the prose."""

    packages: tuple[str, ...]
    module_file: str | None
    given_files: tuple[str, ...]
    fixture_roots: tuple[str, ...]
    test_roots: tuple[str, ...]
    registry: str
    ignores: tuple[Ignore, ...]

    def locks(self) -> tuple[str, ...]:
        """Return the repo-relative lock path of each fixture root."""
        return tuple(root + LOCK_NAME for root in self.fixture_roots)


def run(args: argparse.Namespace, ctx: Context) -> int:
    """Scaffold the repository ``ctx`` names; return the exit code. Raises ``UsageError``
    (exit 2) when a file it would write exists (without ``--force``) or lies behind a
    symlink, and ``PatchlaneError`` for what the survey cannot read."""
    repo = ctx.repo()
    rel, outside = map_path_in_repo(repo, ctx.map_option)
    map_target = outside if outside is not None else to_fs(repo, rel or "")
    map_label = rel if rel is not None else os.fspath(map_target)
    found = survey(repo, args.fixtures)

    targets = [map_target, to_fs(repo, found.registry), *(to_fs(repo, k) for k in found.locks())]
    # Even with --force, never write through a symlink: it could point out of the repo.
    for rel_target in (*([rel] if rel is not None else []), found.registry, *found.locks()):
        link = symlink_on_way(repo, rel_target)
        if link is not None:
            raise UsageError(f"{show(link)}: is a symlink; init never writes through one")
    existing = [t for t in targets if os.path.lexists(t)]
    if existing and not args.force:
        names = ", ".join(show(_label(repo, t)) for t in existing)
        raise UsageError(f"{names}: already exists; not overwritten (use --force to replace)")

    adopted = _adopt(repo, found, ctx.out)
    content = MapContent(
        packages=found.packages,
        module=adopted.module,
        tests=adopted.tests,
        left_out=adopted.left_out,
        roots=found.fixture_roots,
        registry=found.registry,
        test_roots=found.test_roots,
        ignores=found.ignores,
        module_name=PROPERTY_MODULE,
        module_file=found.module_file,
    )
    text = render(content)
    # Validate what we are about to write with the same parser every command uses, so a
    # scaffold can never produce a map that patchlane itself refuses.
    review_map = parse_review_map(text, map_label)
    gitignore = gitignore_to_append(repo)

    wrote: list[WrittenFile] = []
    # Locks first and the map last: if hashing fails (an unreadable or symlinked fixture),
    # no map points at locks that do not exist.
    if review_map.fixture is not None:
        for lock, count in write_locks(repo, review_map.fixture, INIT_REASON):
            wrote.append({"path": lock, "kind": "fixture lock", "files": count})
    to_fs(repo, found.registry).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(to_fs(repo, found.registry), REGISTRY_TEXT)
    wrote.append({"path": found.registry, "kind": "freeze registry"})
    atomic_write_text(map_target, text)
    wrote.append({"path": map_label, "kind": "review map"})
    if gitignore is not None:
        append_evidence_rule(gitignore)
        wrote.append({"path": ".gitignore", "kind": "appended .patchlane/ (gate's evidence)"})
    notes = _notes(repo, found, content, gitignore is not None)
    if ctx.out.json:
        _json(ctx, repo, found, content, wrote, notes)
        return Exit.GREEN
    for item in wrote:
        extra = f" ({item['files']} file(s) hashed)" if "files" in item else ""
        ctx.out.say(f"wrote {show(item['path'])}: {item['kind']}{extra}")
    for left in content.left_out:
        ctx.out.say(left.line())
    for note in notes:
        ctx.out.say(f"note: {note}")
    say_next(ctx.out, repo, map_label)
    return Exit.GREEN


def _adopt(repo: Path, found: Survey, out: Output) -> Adopted:
    """Run the candidate properties once (``init_trial``) when there is code for a lane to
    cover; without code, the ``@given`` tests are only proposed in a comment, unrun."""
    module = PROPERTY_MODULE if found.module_file is not None else None
    if not found.packages:
        return Adopted(None, found.given_files, ())
    if module is None and not found.given_files:
        return Adopted(None, (), ())
    out.progress("init: running the candidate properties once at the work tree")
    return adopt(
        repo,
        found.packages,
        module,
        found.given_files,
        seed=DEFAULT_SEED,
        cases=DEFAULT_CASES,
        out=out,
    )


def _json(
    ctx: Context,
    repo: Path,
    found: Survey,
    content: MapContent,
    wrote: list[WrittenFile],
    notes: list[str],
) -> None:
    lane = content.property_lane
    data = {
        "repo": os.fspath(repo),
        "wrote": wrote,
        # null when the lane was left out (it is then a comment in the map).
        "property": (
            {
                "paths": list(content.packages),
                "module": content.module,
                **({"tests": list(content.tests)} if content.tests else {}),
            }
            if lane
            else None
        ),
        "left_out": [{"name": x.name, "why": x.why} for x in content.left_out],
        # The code the replay alone judges (lanes.replay.paths), when there is no lane.
        "replay_paths": [] if lane else list(content.packages),
        "replay_tests": list(content.test_roots),
        "ignore": [{"path": i.path, "reason": i.reason} for i in content.ignores],
        "fixture_roots": list(found.fixture_roots),
        "notes": notes,
        # The gate command the human output's next: line prints (a shell line).
        "next": next_command(repo)[1],
    }
    write_stdout(dumps_report(data))


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


def _writable(rel: str) -> bool:
    """Whether a found path can be written into a review map as it is."""
    return path_problem(rel) is None and rel.isprintable()


def _checked_rel(rel: str, what: str) -> str:
    problem = path_problem(rel)
    if problem is not None:
        raise UsageError(f"{what}: {problem}")
    if not rel.isprintable() or any(0xDC80 <= ord(c) <= 0xDCFF for c in rel):
        raise UsageError(f"{what}: {rel!a} cannot be written into a review map; rename it")
    return rel


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


def survey(repo: Path, fixtures: list[str] | None) -> Survey:
    """Find what ``init`` writes the map from, running nothing. Raises ``UsageError`` for a
    bad ``--fixtures``."""
    packages = find_code_paths(repo, PROPERTY_MODULE.split(".")[0])
    if fixtures:
        roots = tuple(dict.fromkeys(fixture_root_from_option(repo, f) for f in fixtures))
        for a in roots:
            for b in roots:
                if a != b and b.startswith(a):
                    raise UsageError(f"--fixtures: {b} lies inside {a}; give each root once")
    else:
        roots = find_fixture_roots(repo)
    # A root whose name a map cannot hold (unprintable, unsafe) is left to the user.
    test_roots = tuple(r for r in find_test_roots(repo, packages) if _writable(r)) or ("tests/",)
    registry = registry_folder(test_roots, packages) + REGISTRY_NAME
    taken = (*packages, *test_roots, *roots)
    return Survey(
        packages=packages,
        module_file=find_property_module(repo),
        given_files=find_given_test_files(repo),
        fixture_roots=roots,
        test_roots=test_roots,
        registry=registry,
        ignores=tuple(
            i for i in (*find_prose(repo, taken), *find_tooling(repo, taken)) if _writable(i.path)
        ),
    )


def _notes(repo: Path, found: Survey, content: MapContent, appended: bool) -> list[str]:
    """The notes ``init`` prints after what it wrote and what it left out."""

    notes: list[str] = []
    if found.given_files and content.property_lane and content.tests:
        notes.append(
            f"Hypothesis (@given) tests that held at the work tree run as properties "
            f"(lanes.property.tests): {_listed(content.tests)}"
        )
    if found.given_files and not found.packages:
        notes.append(
            f"found Hypothesis (@given) tests in {_listed(found.given_files)}: proposed as "
            "lanes.property.tests in a comment (no package or module to give the lane's paths)"
        )
    if not found.packages:
        notes.append(
            "no package or module found (in src/ or at the top level): name the code's "
            "folders in lanes.replay.paths (or a property lane), or every code patch is "
            "undecided (map incomplete)"
        )
    elif not content.property_lane:
        why = "no property held at the base" if content.left_out else "no properties found"
        notes.append(
            f"{why}: the code ({_listed(found.packages)}) is judged by the base's tests alone "
            f"(lanes.replay.paths); {HOW_TO_ADD}"
        )
    if not appended and not evidence_ignored(repo):
        notes.append(
            "'patchlane gate' writes its evidence into .patchlane/ by default: "
            "add .patchlane/ to .gitignore"
        )
    if not found.fixture_roots:
        notes.append(
            f"no fixture root ({FIXTURES_PARENT}/*/ or --fixtures DIR): "
            "the fixture lane is left out"
        )
    if found.test_roots not in (("tests/",), ("test/",)):
        inside = [r for r in found.test_roots if r in found.packages]
        where = ", ".join(found.test_roots)
        tail = " (a package's test folders are the suite, its modules source)" if inside else ""
        notes.append(f"the tests are in {where}: lanes.replay.tests{tail}")
    if content.ignores:
        paths = ", ".join(i.path for i in content.ignores)
        notes.append(
            f"prose and tools written as ignore entries ({paths}): delete any whose changes you want reviewed"
        )
    return notes


def _listed(items: tuple[str, ...], shown: int = 3) -> str:
    listed = ", ".join(items[:shown])
    return listed + (f" and {len(items) - shown} more" if len(items) > shown else "")
