"""The house plan (docs/architecture.md §6) as import-linter contracts, run by the suite: the
real tree keeps them, and a tree given one deliberate crossing breaks the contract it
crosses (so the contracts can fail)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = (
    "import sys; from importlinter.cli import lint_imports; "
    "sys.exit(lint_imports(no_cache=True, no_logo=True))"
)


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """Run import-linter with ``root``'s pyproject.toml on the ``patchlane`` of ``root/src``."""
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    return subprocess.run(
        [sys.executable, "-c", LINT], cwd=root, env=env, capture_output=True, text=True, check=False
    )


def test_the_tree_keeps_every_contract() -> None:
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 kept, 0 broken" in proc.stdout, proc.stdout


CROSSINGS = {
    # a lane importing the gate, at module level
    "upward": ("lanes/fixture/lane.py", "from patchlane.gate import verdict\n", "layers"),
    # the project layer reaching a lane, inside a function (imported lazily, still counted)
    "lazy upward": (
        "project/classify.py",
        "def _crossing() -> None:\n    from patchlane.lanes.replay import select  # noqa\n",
        "layers",
    ),
    # one lane importing another
    "sideways": (
        "lanes/freeze/audit.py",
        "from patchlane.lanes.replay import canary\n",
        "each lane is independent",
    ),
    # child-side code importing a parser
    "child parser": ("child/reads.py", "import yaml\n", "child-side code"),
    # child-side code reaching git (through a module that imports it)
    "child git": (
        "child/styles.py",
        "from patchlane.infra import tree  # noqa\n",
        "child-side code",
    ),
    # a format importing the project layer above it
    "format upward": (
        "formats/status.py",
        "from patchlane.project import config\n",
        "layers",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CROSSINGS))
def test_a_deliberate_crossing_breaks_its_contract(case: str, tmp_path: Path) -> None:
    module, line, contract = CROSSINGS[case]
    shutil.copytree(
        ROOT / "src" / "patchlane",
        tmp_path / "src" / "patchlane",
        ignore=shutil.ignore_patterns("__pycache__", "example"),
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "src" / "patchlane" / module
    target.write_text(target.read_text("utf-8") + "\n" + line, encoding="utf-8")
    proc = lint_imports(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    dotted = "patchlane." + module.removesuffix(".py").replace("/", ".")
    assert f"{contract}" in proc.stdout and "BROKEN" in proc.stdout, proc.stdout
    assert dotted in proc.stdout, proc.stdout
    assert "0 kept" not in proc.stdout  # the other contracts still hold


@pytest.mark.parametrize(
    "package", ["patchlane.lanes.fixture", "patchlane.lanes.freeze", "patchlane.lanes.property"]
)
def test_every_name_a_lane_package_exports_resolves(package: str) -> None:
    # A lane's ``__init__`` may load its names lazily (the freeze lane does): a name whose
    # module moved would fail only when first used.
    import importlib

    module = importlib.import_module(package)
    names = getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")])
    for name in names:
        assert getattr(module, name) is not None, name


# What code inside a child interpreter may import (docs/architecture.md §6): the standard
# library, the test tools whose process it is, and these stdlib-only modules of patchlane.
CHILD_THIRD_PARTY = {"pytest", "_pytest", "pluggy", "coverage", "hypothesis"}
CHILD_HELPERS = {
    "patchlane",
    "patchlane.props",
    "patchlane.infra",
    "patchlane.infra.bytecode",
    "patchlane.infra.cache",
    "patchlane.inputs",
    "patchlane.inputs.untrusted",
}


def test_child_side_code_imports_only_its_allowlist() -> None:
    """An allowlist, not a list of what is forbidden: every module child-side code reaches,
    through any chain of imports (inside functions and under TYPE_CHECKING included, and
    each module's parent packages, which Python imports first), is in ``child/``, a listed
    stdlib-only helper, the standard library or a listed test tool."""
    import grimp

    graph = grimp.build_graph("patchlane", include_external_packages=True)
    todo = [m for m in graph.modules if m.split(".")[:2] == ["patchlane", "child"]]
    seen: set[str] = set()
    outside: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parent = module.rpartition(".")[0]
        for target in [*graph.find_modules_directly_imported_by(module), parent]:
            if target.split(".")[0] == "patchlane":
                todo.append(target)
            elif target:
                outside.add(target.split(".")[0])
    internal = {m for m in seen if m.split(".")[:2] != ["patchlane", "child"]}
    assert internal <= CHILD_HELPERS, sorted(internal - CHILD_HELPERS)
    third_party = outside - set(sys.stdlib_module_names)
    assert third_party <= CHILD_THIRD_PARTY, sorted(third_party - CHILD_THIRD_PARTY)
