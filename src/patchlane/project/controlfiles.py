"""Which kind of control file a changed path is (docs/architecture.md §2): the review map, a
fixture lock, the freeze registry, a property module, a test harness file (``conftest.py``,
a ``.pth``, a pytest configuration), committed bytecode or checkout attributes. Split from
``project.classify``, which names these kinds in ``classify.json``.
"""

from __future__ import annotations

import re
from pathlib import Path

from patchlane.formats.facts import HARNESS
from patchlane.infra import git
from patchlane.infra.bytecode import is_bytecode
from patchlane.inputs.paths import under_any
from patchlane.inputs.untrusted import Unreadable, load_toml
from patchlane.project import harness
from patchlane.project.config import ReviewMap

HARNESS_NAMES = frozenset(
    {"conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml",
     "sitecustomize.py", "usercustomize.py"}
)  # fmt: skip
# Config files that configure pytest only when they hold its section; both sides are read.
# pyproject.toml is parsed (``[tool]`` with a dotted ``pytest.ini_options...`` key, or an
# inline table, configures pytest just as well); one it cannot parse counts as harness.
_PYTEST11 = re.compile(rb"^\s*pytest11\s*=", re.MULTILINE)
_SECTIONED = {
    "pyproject.toml": re.compile(rb"^\s*\[\s*tool\.pytest", re.MULTILINE),
    "setup.cfg": re.compile(rb"^\s*\[\s*tool:pytest\s*\]", re.MULTILINE),
    "tox.ini": re.compile(rb"^\s*\[\s*pytest\s*\]", re.MULTILINE),
}


def control_kinds(
    path: str, review_map: ReviewMap, map_rel: str | None, props: tuple[str, ...]
) -> list[str]:
    """Return the kinds of control file ``path`` is (empty when it is none)."""
    kinds = []
    name = path.rsplit("/", 1)[-1]
    if map_rel is not None and path == map_rel:
        kinds.append("review map")
    if review_map.fixture is not None and path in review_map.fixture.locks:
        kinds.append("fixture lock")
    if review_map.freeze is not None and path == review_map.freeze.registry:
        kinds.append("freeze registry")
    if under_any(path, props):
        kinds.append("property module")
    if name in HARNESS_NAMES or name.endswith(".pth"):
        kinds.append(HARNESS)
    if is_bytecode(path):
        kinds.append("committed bytecode")
    if harness.is_gitattributes(path):
        kinds.append("checkout attributes")
    return kinds


def configures_pytest(name: str, data: bytes) -> bool:
    """Return whether a file called ``name`` with bytes ``data`` holds pytest configuration
    (for the names that hold it only in a section: pyproject.toml, setup.cfg, tox.ini).

    A pyproject.toml that cannot be read safely (not UTF-8, not TOML, nested too deeply,
    too large: ``untrusted.load_toml``) returns True: pytest reads that file too, so what
    it does there is unknown, and the patch's content must not be able to hide a harness
    change behind a parse failure. Never raises.
    """
    pattern = _SECTIONED.get(name)
    if pattern is None:
        return False
    if name == "pyproject.toml":
        try:
            doc = load_toml(data)
        except Unreadable:
            return True
        tool = doc.get("tool")
        project = doc.get("project")
        entry_points = project.get("entry-points") if isinstance(project, dict) else None
        # A ``pytest11`` entry point loads its module as a plugin wherever the project is
        # installed (an editable install: on every run).
        plugin = isinstance(entry_points, dict) and "pytest11" in entry_points
        return (isinstance(tool, dict) and "pytest" in tool) or plugin
    if name == "setup.cfg" and _PYTEST11.search(data) is not None:
        return True
    return pattern.search(data) is not None


def sectioned_harness(repo: Path, commits: tuple[str, str], path: str) -> bool:
    """Return whether ``path`` is a file that configures pytest only in a section
    (``configures_pytest``) and holds it at either of ``commits``. Raises ``GitError``."""
    name = path.rsplit("/", 1)[-1]
    if name not in _SECTIONED:
        return False
    for commit in commits:
        found = git.read_file_at(repo, commit, path)
        if found is not None and configures_pytest(name, found[1]):
            return True
    return False
