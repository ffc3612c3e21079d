"""``.gitattributes`` that change what a checkout of the fixtures holds (issue 9).

The fixture lane hashes the bytes git stores. A ``.gitattributes`` can make a checkout (or
``git archive``) hold other bytes: end-of-line conversion (``text``, ``eol``, ``crlf``), a
re-encoding (``working-tree-encoding``), a smudge filter (``filter``), ``$Id$`` expansion
(``ident``), or leave a file out of an archive or rewrite it there (``export-ignore``,
``export-subst``). When one applies to a fixture path, the reviewed lock no longer says what
everyone who checks out the accepted head gets: a review event, never a pass on its own.

Git decides which attributes apply (patterns, precedence, macros, ``!`` and ``-``), not a
parser of ours. This git may predate ``check-attr --source`` (2.40), so the
``.gitattributes`` files in question (their bytes from the commit or the work tree, read
by the caller in the processes it already runs) are written to a scratch work tree beside
an empty scratch git directory, and one ``git check-attr`` answers for every fixture path.
Nothing of this machine's own configuration takes part (no system or global attributes
file, no ``info/attributes``, no index): only what the commit itself carries, which is
what every checkout of it gets. Without any ``.gitattributes`` on the way of a fixture no
process is started at all.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from patchlane import git
from patchlane.errors import GitError
from patchlane.paths import path_problem, to_fs
from patchlane.ui import one_line

ATTRIBUTES_FILE = ".gitattributes"
# The attributes that change the bytes a checkout (or an archive) holds. ``diff``,
# ``merge``, ``whitespace`` and the like change how git shows or merges a file, not its bytes.
CHECKOUT_ATTRIBUTES = frozenset(
    {
        "text",
        "eol",
        "crlf",
        "working-tree-encoding",
        "filter",
        "ident",
        "export-ignore",
        "export-subst",
    }
)
# ``-text`` (also what the ``binary`` macro sets) and the like mean "leave the bytes alone".
HARMLESS_VALUE = "unset"
# Bounds on what one check hands to git: attribute files are a few lines in real projects;
# a patch that commits megabytes of patterns would make git match each against every path.
MAX_ATTRIBUTE_BYTES = 1 << 20
TIMEOUT_S = 60.0
# The events name paths one by one up to this many; the report lists every one.
EVENT_LIMIT = 10
_UPPER = re.compile(rb"[A-Z]")


@dataclass(frozen=True)
class CheckoutAttribute:
    """One checkout attribute that applies to a fixture path, as git reports it (``value``
    is ``set`` or the attribute's value); ``review`` is false when the base already gave
    the path the same attribute files (not the patch's doing)."""

    path: str
    attribute: str
    value: str
    review: bool = True

    def to_json(self) -> dict[str, object]:
        """Return the attribute as JSON-ready data, keys in a fixed order."""
        return {
            "path": self.path,
            "attribute": self.attribute,
            "value": self.value,
            "review": self.review,
        }


@dataclass(frozen=True)
class AttributeCheck:
    """What git said: the checkout attributes found (sorted), and why it could not say
    (``problems``, each a review event of its own)."""

    found: tuple[CheckoutAttribute, ...] = ()
    problems: tuple[str, ...] = ()


def is_attribute_file(path: str) -> bool:
    """Return whether the repository path ``path`` is a ``.gitattributes`` file."""
    return path == ATTRIBUTES_FILE or path.endswith("/" + ATTRIBUTES_FILE)


def files_on_way(path: str) -> list[str]:
    """Return the ``.gitattributes`` paths that can apply to ``path``: the one at the root
    and the one in each directory above it (for a root given as a directory, ``a/b/``,
    also the one in ``a/b`` itself)."""
    parts = path.split("/")[:-1]  # "a/b/" -> a, b; "a/b/c.txt" -> a, b
    dirs = ["/".join(parts[:i]) for i in range(len(parts) + 1)]
    return [f"{d}/{ATTRIBUTES_FILE}" if d else ATTRIBUTES_FILE for d in dirs]


def candidates(paths: Iterable[str]) -> list[str]:
    """Return, sorted, every ``.gitattributes`` path that can apply to one of ``paths``."""
    return sorted({c for p in paths for c in files_on_way(p)})


def check(files: Mapping[str, bytes], paths: Collection[str]) -> AttributeCheck:
    """Ask git which checkout attributes ``files`` (``.gitattributes`` path -> bytes) give
    each of ``paths`` (the fixture files).

    Returns the ``AttributeCheck``: no process runs when ``files`` or ``paths`` is empty.
    A ``.gitattributes`` git cannot read, too many bytes of them, a git that fails or hangs
    are ``problems``, never an exception: malformed input from the patch is never a crash.
    Raises ``GitError`` only when git is not installed.
    """
    if not files or not paths:
        return AttributeCheck()
    size = sum(len(data) for data in files.values())
    if size > MAX_ATTRIBUTE_BYTES:
        return AttributeCheck(
            problems=(
                f"the .gitattributes files on the way of the fixture paths hold {size} bytes "
                f"(more than {MAX_ATTRIBUTE_BYTES}): not evaluated",
            )
        )
    ordered = sorted(paths)
    with tempfile.TemporaryDirectory(prefix="patchlane-attributes-") as tmp:
        scratch = Path(tmp)
        problems = _scratch_repository(scratch, files)
        found: set[tuple[str, str, str]] = set()
        # Matching folds case where core.ignoreCase is true (every macOS and Windows
        # clone): a pattern that matches only there, or a later rule that unsets an
        # attribute only there, must be seen as well. Without an upper-case ASCII letter
        # in the patterns or the paths both runs give the same answer, so one is enough.
        folds = [False]
        if _case_matters(files, ordered):
            folds.append(True)
        for ignore_case in folds:
            answer, problem = _check_attr(scratch, ordered, ignore_case)
            found.update(answer)
            if problem is not None:
                problems.append(problem)
                break
    attributes = tuple(CheckoutAttribute(p, a, v) for p, a, v in sorted(found))
    return AttributeCheck(attributes, tuple(problems))


def _case_matters(files: Mapping[str, bytes], paths: Iterable[str]) -> bool:
    if any(_UPPER.search(data) for data in files.values()):
        return True
    return any(_UPPER.search(os.fsencode(p)) for p in (*files, *paths))


def _scratch_repository(scratch: Path, files: Mapping[str, bytes]) -> list[str]:
    """Make ``scratch/git`` (an empty git directory) and ``scratch/tree`` holding ``files``;
    return why a file could not be placed (one line each)."""
    gitdir = scratch / "git"
    (gitdir / "objects").mkdir(parents=True)
    (gitdir / "refs").mkdir()
    (gitdir / "HEAD").write_text("ref: refs/heads/main\n")
    tree = scratch / "tree"
    tree.mkdir()
    problems = []
    for rel, data in sorted(files.items()):
        bad = path_problem(rel, directory_ok=False)
        target = to_fs(tree, rel) if bad is None else None
        try:
            if target is None:
                raise ValueError(bad)
            target.parent.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            with os.fdopen(os.open(target, flags, 0o644), "wb") as f:
                f.write(data)
        except (OSError, ValueError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            problems.append(f"{rel!r} could not be evaluated ({one_line(why)})")
    return problems


def _check_attr(
    scratch: Path, paths: list[str], ignore_case: bool
) -> tuple[set[tuple[str, str, str]], str | None]:
    """Run one ``git check-attr -a`` over ``paths``; return the checkout attributes found as
    ``(path, attribute, value)`` and why git gave no answer (or ``None``)."""
    env = git.git_env()
    env.update(GIT_ATTR_NOSYSTEM="1", GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    argv = [
        "git",
        f"--git-dir={scratch / 'git'}",
        f"--work-tree={scratch / 'tree'}",
        "-c", f"core.attributesFile={os.devnull}",
        "-c", f"core.ignoreCase={'true' if ignore_case else 'false'}",
        "check-attr", "-z", "--stdin", "-a",
    ]  # fmt: skip
    stdin = b"".join(os.fsencode(p) + b"\0" for p in paths)
    try:
        proc = subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            env=env,
            cwd=scratch / "tree",  # check-attr reads paths relative to where it runs
            timeout=TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError as e:
        raise GitError("git is not installed or not on PATH") from e
    except subprocess.TimeoutExpired:
        return set(), f"git check-attr did not finish within {TIMEOUT_S:g} s"
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        last = one_line(lines[-1]) if lines else f"exit {proc.returncode}"
        return set(), f"git check-attr failed: {last}"
    fields = proc.stdout.split(b"\0")
    found: set[tuple[str, str, str]] = set()
    for i in range(0, len(fields) - 2, 3):
        path, attribute, value = (os.fsdecode(f) for f in fields[i : i + 3])
        if attribute in CHECKOUT_ATTRIBUTES and value != HARMLESS_VALUE:
            found.add((path, attribute, value))
    return found, None


def judge_against_base(
    found: Iterable[CheckoutAttribute],
    head_files: Mapping[str, bytes],
    base_files: Mapping[str, bytes],
) -> tuple[CheckoutAttribute, ...]:
    """Mark the attributes the patch did not bring: only what the head changes counts
    against it (DESIGN.md §2). A path's attributes come from the ``.gitattributes`` files on
    its way; when each of them has the same bytes (or is absent) at the base, the base gave
    the path the very same attributes, and ``review`` is false. Returns the attributes in
    their order."""
    out = []
    for item in found:
        same = all(head_files.get(c) == base_files.get(c) for c in files_on_way(item.path))
        out.append(CheckoutAttribute(item.path, item.attribute, item.value, review=not same))
    return tuple(out)


def review_events(result: AttributeCheck) -> tuple[str, ...]:
    """Return the review events for ``result``: one per attribute to review (up to
    ``EVENT_LIMIT``, then one that counts the rest) and one per problem."""
    events = []
    review = [a for a in result.found if a.review]
    for a in review[:EVENT_LIMIT]:
        events.append(
            f"fixture path {a.path} has checkout attribute {a.attribute}={a.value} from "
            ".gitattributes: the bytes a checkout holds may differ from the locked bytes"
        )
    if len(review) > EVENT_LIMIT:
        more = len(review) - EVENT_LIMIT
        events.append(
            f"{more} more checkout attribute(s) from .gitattributes apply to fixture paths "
            "(listed in the fixture report's checkout_attributes): the bytes a checkout "
            "holds may differ from the locked bytes"
        )
    for problem in result.problems:
        events.append(
            f"fixture paths: {problem}: the bytes a checkout holds may differ from the locked bytes"
        )
    return tuple(events)
