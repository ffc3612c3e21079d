"""The code under test is the tree under judgement (docs/architecture.md §2): the names a
tree provides, where the environment would import them from, how a child is shown the tree,
and the check of where each project module came from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchlane.child.origins import module_origins
from patchlane.infra import origins, sandbox
from patchlane.infra.sandbox import Presentation
from tests.gitrepo import GitRepo

SANDBOXED = sandbox.isolation().sandboxed
needs_bwrap = pytest.mark.skipif(
    not SANDBOXED, reason=f"no kernel sandbox here: {sandbox.isolation().why}"
)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_names_a_tree_provides_are_its_src_and_root_packages_and_modules(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        {
            "src/shapes/__init__.py": "",
            "src/helper.py": "",
            "src/ns/plugin/__init__.py": "",  # a namespace directory: its children
            "src/ns/extra.py": "",
            "src/not-a-name/__init__.py": "",
            "flat/__init__.py": "",
            "setup.py": "",
            "tests/test_x.py": "",  # no __init__: no importable name at the root
            "docs/conf.txt": "",
        },
    )
    (tmp_path / "linked").symlink_to(tmp_path / "flat")
    names = origins.project_names(tmp_path)
    assert sorted(names) == ["flat", "helper", "ns.extra", "ns.plugin", "setup", "shapes"]
    assert names["shapes"] == tmp_path / "src" / "shapes"
    assert names["ns.extra"] == tmp_path / "src" / "ns" / "extra.py"


def test_a_module_from_outside_the_tree_is_named_with_where_it_came_from(tmp_path: Path) -> None:
    tree, repo = tmp_path / "checkout", tmp_path / "repo"
    write(tree, {"src/shapes/__init__.py": "", "tests/test_x.py": ""})
    site = tmp_path / "venv" / "site-packages"
    shown = Presentation(
        tree, repo, True, ((tree / "src" / "other", site / "other"),), ("other", "shapes")
    )
    record: dict[str, object] = {
        "shapes": f"{repo}/src/shapes/__init__.py",  # the tree, shown at the repository
        "shapes.sub": f"{repo}/.venv/lib/shapes/sub.py",  # the host's, below the repository
        "other": f"{site}/other/__init__.py",  # the tree's copy, bound over the install
        "other.deep": f"{site}/other/deep.py",
        "json": "/usr/lib/python3/json/__init__.py",  # not the project's
        "shapesque": "/elsewhere/shapesque.py",  # a name that only starts like one
    }
    assert origins.foreign(record, shown) == [f"shapes.sub from {repo}/.venv/lib/shapes/sub.py"]
    record["shapes"] = f"{site}/shapes/__init__.py"
    assert origins.foreign(record, shown)[0] == f"shapes from {site}/shapes/__init__.py"


def test_without_mounts_only_the_tree_itself_is_the_tree(tmp_path: Path) -> None:
    tree, repo = tmp_path / "checkout", tmp_path / "repo"
    write(tree, {"src/shapes/__init__.py": ""})
    shown = Presentation(tree, tree, True, (), ("shapes",))
    assert origins.foreign({"shapes": f"{tree}/src/shapes/__init__.py"}, shown) == []
    # An editable install pointing at the user's work tree: the base's code, not the head's.
    found = origins.foreign({"shapes": [f"{repo}/src/shapes"]}, shown)
    assert found == [f"shapes from {repo}/src/shapes"]
    assert "shapes from" in origins.describe(found)


def test_the_child_records_the_file_of_each_project_module(tmp_path: Path) -> None:
    write(tmp_path, {"pl_origin_pkg/__init__.py": "", "pl_origin_pkg/mod.py": ""})
    write(tmp_path, {"pl_origin_ns/part.py": ""})
    sys.path.insert(0, os.fspath(tmp_path))
    try:
        import pl_origin_ns.part  # noqa: F401
        import pl_origin_pkg.mod  # noqa: F401

        found = module_origins(["pl_origin_pkg", "pl_origin_ns"])
    finally:
        sys.path.remove(os.fspath(tmp_path))
        for name in [n for n in sys.modules if n.startswith(("pl_origin_pkg", "pl_origin_ns"))]:
            del sys.modules[name]
    assert found["pl_origin_pkg"] == os.fspath(tmp_path / "pl_origin_pkg" / "__init__.py")
    assert found["pl_origin_pkg.mod"] == os.fspath(tmp_path / "pl_origin_pkg" / "mod.py")
    assert found["pl_origin_ns"] == [os.fspath(tmp_path / "pl_origin_ns")]  # a namespace
    assert "os" not in found


@pytest.mark.slow
def test_the_probe_finds_installed_names_without_running_sitecustomize(tmp_path: Path) -> None:
    place = tmp_path / "path-entry"
    marker = tmp_path / "ran"
    write(
        place,
        {
            "shapes/__init__.py": f"open({str(marker)!r}, 'w').close()\n",
            "flatmod.py": f"open({str(marker)!r}, 'w').close()\n",
            "ns/inner.py": "",
            "sitecustomize.py": f"open({str(marker)!r}, 'w').close()\n",
        },
    )
    env = {"PATH": os.defpath, "PYTHONPATH": os.fspath(place)}
    found = origins.installed_at(
        ("absent_name", "flatmod", "ns.inner", "shapes"), tuple(env.items()), os.fspath(tmp_path)
    )
    assert found == {
        "flatmod": os.fspath(place / "flatmod.py"),
        "ns.inner": os.fspath(place / "ns" / "inner.py"),
        "shapes": os.fspath(place / "shapes"),
    }
    assert not marker.exists()  # neither the project's code nor a sitecustomize ran


@pytest.mark.slow
@needs_bwrap
def test_a_child_sees_the_tree_at_the_repository_path_with_its_git(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.write("VERSION", "base\n")
    repo.write("src/shapes/__init__.py", "SIDE = 'base'\n")
    repo.commit("base")
    repo.write("VERSION", "head\n")
    repo.write("src/shapes/__init__.py", "SIDE = 'head'\n")
    head = repo.commit("head")
    repo.git("checkout", "-q", "HEAD~1")  # the user's work tree holds the base
    tree = tmp_path / "checkout"
    from patchlane.infra import git

    git.checkout_detached(repo.path, head, tree)
    # Where the environment has another copy of the package (a regular install).
    site = tmp_path / "site" / "shapes"
    write(site.parent, {"shapes/__init__.py": "SIDE = 'installed'\n"})
    shown = Presentation(tree, repo.path, True, ((tree / "src" / "shapes", site),), ("shapes",))
    script = (
        "pwd; cat VERSION; cat src/shapes/__init__.py; "
        f"cat {site}/__init__.py; git rev-parse HEAD; git status --porcelain | wc -l"
    )
    layers = sandbox.isolation()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    confinement = sandbox.Confinement(scratch, writable=(tree,), presented=shown)
    argv = layers.command(["/bin/sh", "-c", script], confinement, tree)
    env = {"PATH": os.defpath, "HOME": os.fspath(scratch), "GIT_CONFIG_NOSYSTEM": "1"}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        os.path.realpath(repo.path),
        "head",
        "SIDE = 'head'",
        "SIDE = 'head'",  # the tree's copy, over the install
        head,
        "0",
    ]
    assert (repo.path / "VERSION").read_text() == "base\n"  # the user's tree is untouched


@needs_bwrap
@pytest.mark.parametrize("writable", [True, False])
def test_what_the_gate_hands_the_child_by_path_is_the_hosts_whatever_the_tree_holds(
    tmp_path: Path, writable: bool
) -> None:
    repo, tree = tmp_path / "repo", tmp_path / "checkout"
    # The user's repository: its evidence directory (a freeze report the run's plugin reads)
    # and a directory on the interpreter's path.
    write(repo, {".patchlane/freeze.json": "host\n", "src/mod.py": "host\n", "env/x": "host\n"})
    # The patch commits its own files at those paths.
    write(tree, {".patchlane/freeze.json": "forged\n", "src/mod.py": "tree\n"})
    layers = sandbox.isolation()
    shown = sandbox.Isolation(
        layers.kind,
        layers.why,
        layers.bwrap,
        (),
        layers.hidden,
        (*layers.shown, repo / "src", repo / "env"),  # as sys.path entries would be
        layers.secrets,
    )
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    confinement = sandbox.Confinement(
        scratch,
        writable=(tree,),
        readable=(repo / ".patchlane" / "freeze.json",),
        presented=Presentation(tree, repo, writable),
    )
    script = "cat .patchlane/freeze.json src/mod.py env/x; touch written 2>/dev/null; ls written"
    argv = shown.command(["/bin/sh", "-c", script], confinement, tree)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    # The report is the host's; the source directory is the tree's (what a plain run in
    # the user's checkout of the head imports); what only the host has is shown again; a
    # collection's tree stays read-only.
    assert proc.stdout.splitlines() == ["host", "tree", "host", *(["written"] * writable)]
    assert (tree / "written").exists() == writable


def _records(origins_record: dict[str, object] | None) -> list[dict[str, object]]:
    records: list[dict[str, object]] = [
        {"collected": ["tests/test_x.py::test_a"]},
        {"n": "tests/test_x.py::test_a", "w": "call", "o": "passed"},
        {"fin": "tests/test_x.py::test_a"},
    ]
    if origins_record is not None:
        records.append({"origins": origins_record})
    return [*records, {"exit": 0}]


def test_a_run_folds_where_its_project_modules_came_from(tmp_path: Path) -> None:
    from patchlane.errors import ForeignCode
    from patchlane.lanes.replay.fold import fold
    from patchlane.lanes.replay.run import checked_origins

    tree = tmp_path / "checkout"
    write(tree, {"src/shapes/__init__.py": ""})
    shown = Presentation(tree, tree, True, (), ("shapes",))
    ids = ["tests/test_x.py::test_a"]
    inside = _records({"shapes": f"{tree}/src/shapes/__init__.py"})
    assert fold(inside, ids, (), {}, shown=shown).foreign == ()
    elsewhere = _records({"shapes": "/venv/site-packages/shapes/__init__.py"})
    run = fold(elsewhere, ids, (), {}, shown=shown)
    assert run.foreign == ("shapes from /venv/site-packages/shapes/__init__.py",)
    assert run.results[ids[0]].outcome == "passed"  # no evidence, not a failure
    with pytest.raises(ForeignCode, match="shapes from /venv/site-packages"):
        checked_origins(run)
    # A run that ran its tests and said how it ended but not where its modules came from.
    silent = fold(_records(None), ids, (), {}, shown=shown)
    assert silent.foreign == ("(the run did not report where the project's modules came from)",)
    # Without project names, nothing to check.
    assert fold(elsewhere, ids, (), {}, shown=Presentation(tree, tree)).foreign == ()


@pytest.mark.slow
@needs_bwrap
def test_a_run_in_the_sandbox_imports_the_trees_copy_over_an_installed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from patchlane.lanes.replay.results import PASSED
    from patchlane.lanes.replay.run import run_tests

    tree = tmp_path / "checkout"
    write(
        tree,
        {
            "src/shapes/__init__.py": "SIDE = 'tree'\n",
            "tests/test_side.py": "import shapes\n\n\ndef test_side():\n    assert shapes.SIDE == 'tree'\n",
        },
    )
    installed = tmp_path / "installed"
    write(installed, {"shapes/__init__.py": "SIDE = 'installed'\n"})
    # The installed copy first on the path the run inherits (as a regular install is).
    paths = [os.fspath(installed), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    run = run_tests(tree, nodeids=["tests/test_side.py::test_side"], hash_seed=1, timeout_s=120)
    assert run.results["tests/test_side.py::test_side"].outcome == PASSED, run.output_tail
    assert (installed / "shapes" / "__init__.py").read_text() == "SIDE = 'installed'\n"


@pytest.mark.slow
def test_the_trees_copy_goes_over_every_other_place_the_environment_installs_it(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "checkout"
    write(tree, {"src/shapes/__init__.py": "", "lib/flat.py": "", "flat.py": ""})
    installed = tmp_path / "site"
    write(installed, {"shapes/__init__.py": "", "flat.py": "", "helper.py": ""})
    env = {"PATH": os.defpath, "PYTHONPATH": os.fspath(installed)}
    shown = origins.presentation(tree, env, sandboxed=True)
    assert shown.at == tree and shown.names == ("flat", "shapes")
    assert shown.over == (
        (tree / "flat.py", installed / "flat.py"),
        (tree / "src" / "shapes", installed / "shapes"),
    )
    # A relative entry is read from the tree, as the child (started there) reads it: the
    # tree's own copy, nothing to bind.
    relative = {"PATH": os.defpath, "PYTHONPATH": "src"}
    assert origins.presentation(tree, relative, sandboxed=True).over == ()
    # Without the sandbox nothing is probed or mounted; the names still make the check.
    bare = origins.presentation(tree, env, sandboxed=False)
    assert (bare.over, bare.names) == ((), ("flat", "shapes"))


@pytest.mark.slow
@needs_bwrap
def test_a_checkout_that_shares_the_repositorys_objects_reads_its_history_there(
    tmp_path: Path,
) -> None:
    repo = GitRepo(tmp_path / "repo")
    for n in range(3):
        repo.write("VERSION", f"{n}\n")
        repo.commit(f"commit {n}")
    tree = tmp_path / "checkout"
    # A clone that borrows the repository's objects by absolute path: shown at the
    # repository's path, that path would be its own object directory.
    subprocess.run(
        ["git", "clone", "-q", "--shared", os.fspath(repo.path), os.fspath(tree)],
        check=True,
        env={**repo.env(), "GIT_CONFIG_GLOBAL": os.devnull},
    )
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    confinement = sandbox.Confinement(
        scratch, writable=(tree,), presented=Presentation(tree, repo.path, True)
    )
    script = "git log --format=%s | wc -l; git cat-file -t HEAD~2"
    argv = sandbox.isolation().command(["/bin/sh", "-c", script], confinement, tree)
    env = {"PATH": os.defpath, "HOME": os.fspath(scratch), "GIT_CONFIG_NOSYSTEM": "1"}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert proc.stdout.split() == ["3", "commit"], proc.stderr
