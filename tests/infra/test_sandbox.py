"""The kernel sandbox (docs/architecture.md §2): a child that runs the patch's code cannot
write where later runs read, reach the network or see the user's home, cache or credentials;
where bubblewrap cannot run, the fallback is named."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchlane.infra import sandbox
from patchlane.infra.cache import default_cache
from patchlane.lanes.replay.results import FAILED, PASSED
from patchlane.lanes.replay.run import run_tests
from tests.lanes.replay.trees import write_tree

SANDBOXED = sandbox.isolation().sandboxed
needs_bwrap = pytest.mark.skipif(
    not SANDBOXED, reason=f"no kernel sandbox here: {sandbox.isolation().why}"
)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP server on the host's loopback that no sandboxed child may reach."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    yield server
    server.close()


def _escape_tests(targets: dict[str, Path], port: int) -> str:
    """A test module with one test per place a child must not write, one that connects to
    the host's loopback, and one that writes inside its own tree (which it may)."""
    lines = ["import os, socket, pathlib", ""]
    for name, target in targets.items():
        lines += [
            f"def test_write_{name}():",
            f"    pathlib.Path({str(target)!r}).write_text('the patch was here')",
            "",
        ]
    lines += [
        "def test_connect():",
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'hi')",
        "",
        "def test_write_own_tree():",
        "    pathlib.Path('written-by-the-test.txt').write_text('fine')",
        "",
        "def test_environment():",
        "    assert 'PATCHLANE_TEST_SECRET_TOKEN' not in os.environ",
        # The user's home and temporary directory, as a plain run has them; the home is
        # read-only and its credential files read as empty.
        f"    assert os.environ['HOME'] == {str(Path.home())!r}",
        "    assert not os.access(os.environ['HOME'], os.W_OK)",
        f"    assert os.environ.get('TMPDIR') == {os.environ.get('TMPDIR')!r}",
        "    assert pathlib.Path.home().joinpath('.pypirc').read_text() == ''",
        "",
    ]
    return "\n".join(lines)


@pytest.mark.slow
@needs_bwrap
def test_a_test_run_cannot_write_outside_its_tree_or_reach_the_network(
    tmp_path: Path, listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = default_cache()
    cache.mkdir(parents=True, exist_ok=True)
    work_tree = tmp_path / "users-repo"
    work_tree.mkdir()
    (Path.home() / ".cache").mkdir(exist_ok=True)
    targets = {
        "cache": cache / "maps-forged.json",
        "work_tree": work_tree / "src.py",
        "home": Path.home() / ".cache" / f"patchlane-sandbox-test-{os.getpid()}",
    }
    # /tmp is writable, but it is the child's own: nothing lands in the host's.
    private_tmp = Path("/tmp") / f"patchlane-sandbox-test-{os.getpid()}"
    monkeypatch.setenv("PATCHLANE_TEST_SECRET_TOKEN", "hunter2")
    port = listener.getsockname()[1]
    tests = _escape_tests(targets, port) + (
        "\n\ndef test_private_tmp():\n"
        f"    pathlib.Path({str(private_tmp)!r}).write_text('mine')\n"
        f"    assert pathlib.Path({str(private_tmp)!r}).read_text() == 'mine'\n"
    )
    tree = write_tree(tmp_path / "tree", {"tests/test_escape.py": tests})
    ids = [f"tests/test_escape.py::test_write_{n}" for n in targets]
    ids += [f"tests/test_escape.py::test_{n}" for n in ("connect", "write_own_tree", "environment")]
    ids.append("tests/test_escape.py::test_private_tmp")
    pypirc = Path.home() / ".pypirc"
    planted = not pypirc.exists()
    if planted:
        pypirc.write_text("[pypi]\npassword = hunter2\n")
    try:
        run = run_tests(tree, nodeids=ids, hash_seed=3, timeout_s=120)
    finally:
        if planted:
            pypirc.unlink()

    outcomes = {n: r.outcome for n, r in run.results.items()}
    assert outcomes == {
        **{n: FAILED for n in ids[: len(targets) + 1]},
        "tests/test_escape.py::test_write_own_tree": PASSED,
        "tests/test_escape.py::test_environment": PASSED,
        "tests/test_escape.py::test_private_tmp": PASSED,
    }
    assert not private_tmp.exists()
    for name, target in targets.items():
        assert not target.exists(), name
        # The attempt is in the evidence: the failing test's own error.
        why = run.results[f"tests/test_escape.py::test_write_{name}"].why
        assert re.search(r"(OSError|FileNotFoundError|PermissionError)\)?$", why), why
    # Its own loopback, where nothing listens: the host's is out of reach.
    assert re.search(r"Error\)?$", run.results["tests/test_escape.py::test_connect"].why)
    with pytest.raises(TimeoutError):
        listener.accept()
    assert (tree / "written-by-the-test.txt").read_text() == "fine"


@needs_bwrap
def test_a_child_in_the_sandbox_sees_none_of_the_users_home() -> None:
    secret = Path.home() / f".patchlane-sandbox-secret-{os.getpid()}"
    secret.write_text("private")
    try:
        probe = f"import pathlib; print(pathlib.Path({str(secret)!r}).exists())"
        layers = sandbox.isolation()
        scratch = Path(os.environ.get("TMPDIR") or "/tmp")
        argv = layers.command(
            [sys.executable, "-S", "-c", probe], sandbox.Confinement(scratch), Path("/")
        )
        proc = subprocess.run(argv, capture_output=True, check=True, timeout=60)
    finally:
        secret.unlink()
    assert proc.stdout.decode().strip() == "False"


def test_credentials_never_reach_a_confined_child(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin",
        "GITHUB_TOKEN": "t",
        "AWS_SECRET_ACCESS_KEY": "k",
        "SSH_AUTH_SOCK": "/run/agent",
        "PATCHLANE_SIGNING_KEY": "/keys/ed25519",
        "MY_API_KEY": "x",
        "DB_PASSWORD": "p",
        "GIT_AUTHOR_NAME": "kept",
        "PYTHONPATH": "kept",
    }
    kept = sandbox.confined_env(env, tmp_path)
    assert kept == {
        "PATH": "/usr/bin",
        "GIT_AUTHOR_NAME": "kept",
        "PYTHONPATH": "kept",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
    }


def _isolation_in(env: dict[str, str]) -> dict[str, str]:
    code = (
        "import json; from patchlane.infra.sandbox import isolation; i = isolation(); "
        "print(json.dumps({'kind': i.kind, 'why': i.why, 'line': i.describe()}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, check=True, timeout=120
    )
    result: dict[str, str] = json.loads(proc.stdout)
    return result


@pytest.mark.slow
def test_without_bwrap_the_fallback_is_named(tmp_path: Path) -> None:
    env = {**os.environ, sandbox.BWRAP_ENV: "none"}
    got = _isolation_in(env)
    assert got["kind"] in ("netns", "none")
    assert got["why"] == "PATCHLANE_BWRAP=none"
    assert got["line"].startswith("no kernel sandbox (PATCHLANE_BWRAP=none)")
    missing = {**os.environ, sandbox.BWRAP_ENV: str(tmp_path / "no-such-bwrap")}
    assert (
        "bwrap failed" in _isolation_in(missing)["why"]
        or "could not start" in (_isolation_in(missing)["why"])
    )


@needs_bwrap
def test_the_probe_finds_the_sandbox_here() -> None:
    got = _isolation_in(dict(os.environ))
    assert got["kind"] == "bwrap"
    assert got["why"] == ""


def test_the_bwrap_command_hides_home_and_cache_and_binds_only_the_writable_places(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    interpreter = home / ".pyenv"
    cache = tmp_path / "cache"
    for place in (interpreter, cache):
        place.mkdir(parents=True)
    layers = sandbox.Isolation(
        "bwrap", "", "/usr/bin/bwrap", (), hidden=(home, cache), shown=(interpreter,)
    )
    tree, scratch, repository = tmp_path / "tree", tmp_path / "scratch", home / "src" / "proj"
    for place in (tree, scratch, repository):
        place.mkdir(parents=True)
    sandbox.show(repository)
    argv = layers.command(["python"], sandbox.Confinement(scratch, writable=(tree,)), tree)
    text = " ".join(argv)
    assert argv[0] == "/usr/bin/bwrap" and argv[-2:] == ["--", "python"]
    for option in ("--die-with-parent", "--unshare-all", "--cap-drop ALL", "--ro-bind / /"):
        assert option in text
    assert f"--tmpfs {home} " in text and f"--tmpfs {cache} " in text
    assert f"--ro-bind {interpreter} {interpreter}" in text
    assert f"--ro-bind {repository} {repository}" in text  # the user's repository: read-only
    assert f"--bind {tree} {tree}" in text and f"--bind {scratch} {scratch}" in text
    assert text.index(f"--tmpfs {home}") < text.index(f"--ro-bind {interpreter}")
    assert argv[argv.index("--chdir") + 1] == str(tree)


@pytest.mark.slow
@needs_bwrap
def test_a_test_cannot_reach_a_hosts_unix_socket_or_read_a_hidden_secret(tmp_path: Path) -> None:
    # A unix socket is a file, beyond a network namespace's reach: an ssh agent or a
    # docker socket would be one. A secret file the process holds (a signing key) and the
    # system's password file read as nothing a test could leak through its node ids.
    sock = tmp_path / "agent.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    server.listen()
    server.settimeout(0.2)
    secret = tmp_path / "host.key"
    secret.write_text("private")
    sandbox.hide_file(secret)
    tests = (
        "import socket\n\n"
        f"def test_socket():\n    s = socket.socket(socket.AF_UNIX)\n    s.connect({str(sock)!r})\n\n"
        f"def test_secret():\n    assert open({str(secret)!r}).read() == 'private'\n\n"
        "def test_shadow():\n    assert open('/etc/shadow').read()\n"
    )
    tree = write_tree(tmp_path / "tree", {"tests/test_reach.py": tests})
    ids = [f"tests/test_reach.py::test_{n}" for n in ("socket", "secret", "shadow")]
    try:
        run = run_tests(tree, nodeids=ids, hash_seed=3, timeout_s=120)
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()
    assert {n: r.outcome for n, r in run.results.items()} == dict.fromkeys(ids, FAILED)


def test_the_targets_of_links_in_a_path_directory_are_shown(tmp_path: Path) -> None:
    # A site-packages whose packages are links into another environment (under /tmp, which
    # the sandbox hides): the child must see where the links point, or it cannot import.
    elsewhere = tmp_path / "other-env"
    (elsewhere / "pkg").mkdir(parents=True)
    (elsewhere / "mod.py").write_text("X = 1\n", encoding="utf-8")
    site = tmp_path / "site-packages"
    site.mkdir()
    (site / "pkg").symlink_to(elsewhere / "pkg")
    (site / "mod.py").symlink_to(elsewhere / "mod.py")
    (site / "gone").symlink_to(tmp_path / "nowhere")
    (site / "plain.py").write_text("", encoding="utf-8")
    found = sandbox._linked_entries([site, tmp_path / "missing"])
    assert found == {(elsewhere / "pkg").resolve(), (elsewhere / "mod.py").resolve()}
