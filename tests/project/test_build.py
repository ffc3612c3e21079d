"""What counts as compiled code, and the build command run for real in a tree."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from patchlane.infra import sandbox
from patchlane.project.build import (
    Build,
    BuildFailed,
    BuildResult,
    built,
    compiled_changes,
    compiled_paths,
    run_build,
)


def never() -> list[str]:
    raise AssertionError("the tracked files were not needed")


def test_sources_and_binaries_count_and_python_does_not() -> None:
    found = compiled_changes(
        ["src/ext/add.c", "src/ext/add.H", "pkg/fast.pyx", "pkg/core.py", "lib/x.so.1",
         "pkg/_ext.cpython-311-x86_64-linux-gnu.so", "README.md"],
        never,
    )  # fmt: skip
    assert found.sources == ("pkg/fast.pyx", "src/ext/add.H", "src/ext/add.c")
    assert found.binaries == ("lib/x.so.1", "pkg/_ext.cpython-311-x86_64-linux-gnu.so")


def test_build_configuration_counts_only_in_a_project_with_compiled_code() -> None:
    pure = compiled_changes(["pyproject.toml", "pkg/a.py"], lambda: ["pkg/a.py", "setup.py"])
    assert not pure
    compiled = compiled_changes(["pyproject.toml", "pkg/a.py"], lambda: ["pkg/a.py", "csrc/a.c"])
    assert compiled.sources == ("pyproject.toml",)
    assert compiled_changes(["sub/CMakeLists.txt", "x.cmake"], lambda: ["a.rs"]).sources == (
        "sub/CMakeLists.txt",
        "x.cmake",
    )


def test_selection_follows_build_configuration_only_with_a_build() -> None:
    changed = ["setup.py", "a.c", "b.py"]
    assert compiled_paths(changed, None) == ["a.c"]
    assert compiled_paths(changed, Build("make")) == ["a.c", "setup.py"]


def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir(exist_ok=True)
    (root / "keep.py").write_text("x = 1\n")
    return root


def test_the_build_at_the_head_lists_what_it_wrote_that_is_not_a_product(tmp_path: Path) -> None:
    root = tree(tmp_path)
    command = (
        "mkdir -p build/temp && echo o > build/temp/a.o && echo so > _ext.so"
        " && echo 'x = 2' > keep.py && echo 'import os' > conftest.py"
    )
    result = run_build(Build(command), root, "head", audit=True)
    assert result.ok
    assert result.wrote == ("conftest.py", "keep.py")
    assert (root / "_ext.so").read_text() == "so\n"


def test_a_fifo_the_build_leaves_is_listed_never_read(tmp_path: Path) -> None:
    # The head's build is the patch's code: a FIFO in place of a file (or a new one) made
    # the audit's digest block for ever on opening it, hanging the gate.
    root = tree(tmp_path)
    got: list[BuildResult] = []
    command = "mkfifo pipe && rm keep.py && mkfifo keep.py"
    worker = threading.Thread(
        target=lambda: got.append(run_build(Build(command), root, "head", audit=True)),
        daemon=True,
    )
    worker.start()
    worker.join(30.0)
    assert not worker.is_alive(), "the audit blocked on a FIFO the build made"
    assert got[0].ok and got[0].wrote == ("keep.py", "pipe")


def test_a_failing_build_raises_with_the_tail_of_its_output(tmp_path: Path) -> None:
    with pytest.raises(BuildFailed) as caught:
        built(
            Build("echo compiling; echo 'error: add.c:3: expected ;' >&2; exit 4"),
            tree(tmp_path),
            "head",
        )
    result = caught.value.result
    assert (result.ok, result.returncode) == (False, 4)
    assert str(caught.value) == "the build command exited 4 at the head: error: add.c:3: expected ;"


@pytest.mark.slow
def test_a_build_that_hangs_is_stopped(tmp_path: Path) -> None:
    result = run_build(Build("sleep 30", timeout_s=0.5), tree(tmp_path), "base")
    assert result.returncode is None
    assert result.failure() == "the build command did not finish in time at the base"


def test_without_a_build_nothing_runs(tmp_path: Path) -> None:
    assert built(None, tree(tmp_path), "head") is None


@pytest.mark.skipif(not sandbox.isolation().sandboxed, reason="needs bwrap")
def test_the_build_writes_only_its_tree_and_reaches_no_network(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    wrote = run_build(Build(f"echo x > {outside}/leak"), tree(tmp_path), "head")
    assert not wrote.ok and not (outside / "leak").exists()
    probe = "import socket; socket.create_connection(('1.1.1.1', 80), timeout=2)"
    net = run_build(Build(f'python -c "{probe}"'), tree(tmp_path), "head")
    assert not net.ok
    assert "unreachable" in net.tail or "Errno" in net.tail


def test_python_is_the_gates_interpreter(tmp_path: Path) -> None:
    import sys

    result = run_build(
        Build('python -c "import sys; print(sys.executable)"'), tree(tmp_path), "head"
    )
    assert result.ok, result.tail
    real = subprocess.run(
        [sys.executable, "-c", "import sys, os; print(os.path.realpath(sys.executable))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert Path(result.tail.strip()).resolve() == Path(real)
