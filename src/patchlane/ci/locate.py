"""Where an annotation points: repository files read from the patch's head commit (the
commit GitHub shows a pull request's annotations on), else from the work tree.

Every path here comes from the evidence, that is from the patch: it is checked for its
syntax (``inputs.paths.path_problem``) before any file is read, a file is read only when it
is a regular file (never through a link), and nothing read is run, only parsed.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

from patchlane.errors import PatchlaneError
from patchlane.infra import git
from patchlane.inputs.paths import path_problem, symlink_on_way, to_fs
from patchlane.inputs.untrusted import parse_python
from patchlane.lanes.property.discover import top_level_statements

# A file read from the work tree for a line number: larger ones are not read.
MAX_READ_BYTES = 4 * 1024 * 1024
MAX_LINE = 10_000_000


@dataclass(frozen=True)
class Locator:
    """Reads the repository ``repo`` at ``head`` (a commit id; ``None``: the work tree).

    ``roots`` are the import roots of property modules, repository-relative (``""`` is the
    root). ``prefix`` is the repository's place in ``$GITHUB_WORKSPACE`` (``""`` or
    ``sub/dir/``): GitHub resolves an annotation's file from the workspace.
    """

    repo: Path | None
    head: str | None
    roots: tuple[str, ...] = ("", "src")
    prefix: str = ""

    def shown(self, rel: str) -> str:
        """Return the annotation's ``file`` for the repository path ``rel``."""
        return self.prefix + rel

    def read(self, rel: str) -> bytes | None:
        """Return the bytes of the regular file ``rel``, or ``None`` (absent, a link, not
        a file, unsafe, too large, or git cannot answer)."""
        if self.repo is None or path_problem(rel, directory_ok=False) is not None:
            return None
        if self.head is not None:
            try:
                found = git.read_file_at(self.repo, self.head, rel)
            except PatchlaneError:
                return None
            if found is None or found[0].mode not in git.REGULAR_MODES:
                return None
            return found[1]
        path = to_fs(self.repo, rel)
        try:
            if symlink_on_way(self.repo, rel) is not None or not path.is_file():
                return None
            if path.stat().st_size > MAX_READ_BYTES:
                return None
            return path.read_bytes()
        except OSError:
            return None

    def exists(self, rel: str) -> bool:
        """Return whether ``rel`` is a regular file at the head (or in the work tree)."""
        if self.repo is None or path_problem(rel, directory_ok=False) is not None:
            return False
        if self.head is not None:
            try:
                entry = git.entry_at(self.repo, self.head, rel)
            except PatchlaneError:
                return False
            return entry is not None and entry.mode in git.REGULAR_MODES
        return symlink_on_way(self.repo, rel) is None and to_fs(self.repo, rel).is_file()

    def module_file(self, module: str) -> str | None:
        """Return the repository path of the property module ``module``: a dotted name,
        looked up in ``roots`` as Python would (a package's ``__init__.py`` before a
        module file), or a path (``tests/test_x.py``, ``tests/test_x.py::test_y``)."""
        if "/" in module or module.endswith(".py") or "::" in module:
            rel = module.split("::", 1)[0]
            return rel if self.exists(rel) else None
        stem = module.replace(".", "/")
        for root in self.roots:
            base = f"{root}/{stem}" if root else stem
            for rel in (f"{base}/__init__.py", f"{base}.py"):
                if self.exists(rel):
                    return rel
        return None

    def spellings(self, rel: str) -> tuple[str, ...]:
        """Return how a message may name ``rel``: as it is, and relative to each import
        root that holds it (a property's traceback names files from its root)."""
        names = [rel]
        for root in self.roots:
            if root and rel.startswith(root + "/"):
                names.append(rel[len(root) + 1 :])
        return tuple(names)

    def def_line(self, rel: str, qualname: tuple[str, ...]) -> int | None:
        """Return the line of the definition ``qualname`` (``("Class", "test_x")``) in
        the Python file ``rel``, or ``None`` when it cannot be found."""
        data = self.read(rel)
        if data is None or not qualname:
            return None
        try:
            body = parse_python(data, rel).body
        except SyntaxError:
            return None
        node: ast.stmt | None = None
        for name in qualname:
            node = next((n for n in top_level_statements(body) if name in _names(n)), None)
            if node is None:
                return None
            body = node.body if isinstance(node, ast.ClassDef) else []
        return None if node is None else node.lineno


def message_line(text: str, names: tuple[str, ...]) -> int | None:
    """Return the line of the last ``NAME:LINE`` in ``text`` whose ``NAME`` is one of
    ``names`` (a traceback's ``(at checks/props.py:11: ...)``, pytest's
    ``tests/test_x.py:50: AssertionError``), or ``None``."""
    found = None
    for name in names:
        pattern = rf"(?<![\w/.-]){re.escape(name)}:([0-9]{{1,8}})\b"
        for match in re.finditer(pattern, text):
            line = int(match.group(1))
            if 0 < line < MAX_LINE and (found is None or match.start() > found[0]):
                found = (match.start(), line)
    return None if found is None else found[1]


def workspace_prefix(repo: Path | None) -> str:
    """Return ``repo``'s path inside ``$GITHUB_WORKSPACE`` with a trailing ``/`` (``""``
    when it is the workspace itself, lies outside it, or there is no workspace)."""
    workspace = os.environ.get("GITHUB_WORKSPACE")
    if repo is None or not workspace:
        return ""
    try:
        rel = repo.resolve().relative_to(Path(workspace).resolve())
    except (OSError, ValueError):
        return ""
    text = rel.as_posix()
    return "" if text in ("", ".") else text + "/"


def _names(node: ast.stmt) -> tuple[str, ...]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return (node.name,)
    if isinstance(node, ast.Assign):
        return tuple(t.id for t in node.targets if isinstance(t, ast.Name))
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return (node.target.id,)
    return ()
