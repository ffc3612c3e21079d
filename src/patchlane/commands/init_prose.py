"""What ``patchlane init`` knows of prose: the map's ``ignore`` entries, and ``.gitignore``.

A commit that touches only the changelog, the authors or the README would otherwise be
``undecided`` ("map incomplete") until someone writes the ``ignore`` entry by hand. So the
top-level files named as prose usually is (``CHANGELOG*``, ``CHANGES*``, ``HISTORY*``,
``NEWS*``, ``AUTHORS*``, ``CONTRIBUTORS*``, ``README*``, ``LICENSE*``, ``COPYING*``, any
case) and the documentation folders (``docs/``, ``doc/``) and news-fragment folders
(``changelog.d/``, ``changelog/``: no Python module in them) present in the repository are
written as ``ignore`` entries, each with a reason the user can delete. An entry never
hides a test: a file the project's pytest collects (a doctest in ``docs/``) stays a test
file whatever the map ignores (``project.collects``).

The developer's tools beside the package (``TOOL_DIRS``, ``TOOL_FILES``) are ignored the
same way, but only when no ``.py`` file of the code or the tests names them (``find_tooling``).

``.patchlane/`` (where ``gate`` writes its evidence) is appended to the repository's
``.gitignore`` when there is one and git does not ignore that folder already
(``git check-ignore``: whatever spelling of the rule is there, it is never added twice).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from patchlane.infra import git

# File name prefixes (upper-cased) and the reason each kind is written with.
PROSE_FILES = (
    ("CHANGELOG", "release notes"),
    ("CHANGES", "release notes"),
    ("HISTORY", "release notes"),
    ("NEWS", "release notes"),
    ("AUTHORS", "the list of authors"),
    ("CONTRIBUTORS", "the list of contributors"),
    ("README", "the project's description"),
    ("LICENSE", "the licence text"),
    ("COPYING", "the licence text"),
)
DOC_DIRS = ("docs", "doc")
# Folders of news fragments (towncrier): prose when they hold no Python module.
FRAGMENT_PREFIXES = ("CHANGELOG", "CHANGES", "NEWS")
# The developer's own tools beside the package: folders of scripts and build files that the
# project's suite neither imports nor runs. Written as ``ignore`` entries only when no file of
# the code or the tests names them (``_named_by``): a suite that runs its examples keeps
# them judged.
TOOL_DIRS = ("benchmarks", "benchmark", "bench", "examples", "example", "scripts", "tools")
TOOL_FILES = ("Makefile", "GNUmakefile", "makefile", "justfile")
EVIDENCE_DIR = ".patchlane/"
GITIGNORE = ".gitignore"


@dataclass(frozen=True)
class Ignore:
    """One ``ignore`` entry init writes: a path (folders end in ``/``) and its reason."""

    path: str
    reason: str


def _mode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def _holds_python(folder: Path) -> bool:
    for _dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        if any(f.endswith(".py") for f in filenames):
            return True
    return False


def find_prose(repo: Path, taken: tuple[str, ...] = ()) -> tuple[Ignore, ...]:
    """Return the ``ignore`` entries for the prose at the top of ``repo`` (regular files
    and real folders only, links never followed), in name order, leaving out any path in
    ``taken`` (the code's and the tests' paths) or under one."""
    out: list[Ignore] = []
    for child in sorted(repo.iterdir(), key=lambda p: p.name):
        name = child.name
        if not name.isprintable() or name.startswith(".") or '"' in name or "\\" in name:
            continue
        mode = _mode(child)
        if mode is None:
            continue
        upper = name.upper()
        if stat.S_ISREG(mode):
            for prefix, what in PROSE_FILES:
                if upper.startswith(prefix):
                    out.append(Ignore(name, f"{what}: prose, no code runs it"))
                    break
            continue
        if not stat.S_ISDIR(mode) or name + "/" in taken:
            continue
        if name in DOC_DIRS:
            out.append(
                Ignore(f"{name}/", "documentation: prose (a doctest pytest collects stays a test)")
            )
        elif upper.startswith(FRAGMENT_PREFIXES) and not _holds_python(child):
            out.append(Ignore(f"{name}/", "release-note fragments: prose, no code runs them"))
    return tuple(e for e in out if not any(e.path.startswith(t) for t in taken if t))


def _texts(repo: Path, taken: tuple[str, ...]) -> list[bytes]:
    """The bytes of every ``.py`` file under the ``taken`` paths (the code's and the tests'),
    links never followed."""
    texts: list[bytes] = []
    for rel in taken:
        top = repo / rel.rstrip("/")
        if top.is_file() and not top.is_symlink():
            files = [top]
        elif top.is_dir() and not top.is_symlink():
            files = [
                Path(d) / f
                for d, _dirs, names in os.walk(top)
                for f in names
                if f.endswith(".py") and not (Path(d) / f).is_symlink()
            ]
        else:
            continue
        for f in files:
            try:
                texts.append(f.read_bytes())
            except OSError:
                continue
    return texts


def _named_by(name: str, texts: list[bytes]) -> bool:
    word = re.compile(rb"(?<![A-Za-z0-9_])" + re.escape(name.encode()) + rb"(?![A-Za-z0-9_])")
    return any(word.search(t) for t in texts)


def find_tooling(repo: Path, taken: tuple[str, ...]) -> tuple[Ignore, ...]:
    """Return the ``ignore`` entries for the developer's tools at the top of ``repo``
    (``TOOL_DIRS`` folders, ``TOOL_FILES`` build files; regular files and real folders
    only) that no ``.py`` file under ``taken`` (the code's and the tests' paths) names, in
    name order. A commit that touches its benchmarks with the code is then judged on the
    code rather than ``undecided`` for a folder no test reaches."""
    texts: list[bytes] | None = None
    out: list[Ignore] = []
    for child in sorted(repo.iterdir(), key=lambda p: p.name):
        name, mode = child.name, _mode(child)
        if mode is None or any(name + "/" == t or name == t for t in taken):
            continue
        if stat.S_ISDIR(mode) and name.lower() in TOOL_DIRS:
            entry = Ignore(
                f"{name}/",
                "developer tools: neither the code nor the tests name this folder "
                "(delete this entry to have changes here judged)",
            )
        elif stat.S_ISREG(mode) and name in TOOL_FILES:
            entry = Ignore(
                name, "a build file: neither the code nor the tests name it (no test runs it)"
            )
        else:
            continue
        texts = _texts(repo, taken) if texts is None else texts
        if not _named_by(name, texts):
            out.append(entry)
    return tuple(out)


def evidence_ignored(repo: Path) -> bool:
    """Whether git already ignores ``.patchlane/`` (its rules, whatever their spelling)."""
    # check-ignore refuses literal pathspecs (git.run's default); this path has no magic.
    proc = git.run(
        repo,
        "check-ignore",
        "-q",
        "--no-index",
        "--",
        EVIDENCE_DIR + "verdict.json",
        env={"GIT_LITERAL_PATHSPECS": "0"},
    )
    if proc.returncode in (0, 1):
        return proc.returncode == 0
    # git could not say: never append a second rule where the file mentions one.
    try:
        return EVIDENCE_DIR.rstrip("/") in (repo / GITIGNORE).read_text("utf-8", "replace")
    except OSError:
        return False


def gitignore_to_append(repo: Path) -> Path | None:
    """Return the ``.gitignore`` to append ``.patchlane/`` to: the repository's own, a
    regular file (never a link), when git does not ignore the folder yet; else ``None``."""
    path = repo / GITIGNORE
    mode = _mode(path)
    if mode is None or not stat.S_ISREG(mode):
        return None
    return None if evidence_ignored(repo) else path


def append_evidence_rule(path: Path) -> None:
    """Append ``.patchlane/`` (on a line of its own) to the ``.gitignore`` at ``path``."""
    data = path.read_bytes()
    prefix = b"" if not data or data.endswith(b"\n") else b"\n"
    with path.open("ab") as f:
        f.write(prefix + b"# patchlane gate's evidence\n" + EVIDENCE_DIR.encode() + b"\n")
        f.flush()
        os.fsync(f.fileno())
