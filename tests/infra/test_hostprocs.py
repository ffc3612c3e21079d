"""A replay's test process on the host's process table (decision 0032), for real: the sandbox,
the launcher's Landlock domain, the sweep of what a run leaves behind, and the launcher's
refusal when it cannot confine itself (under the kernel's 16 stacked domains)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from patchlane.child import launch
from patchlane.infra import hostprocs, process, sandbox
from patchlane.infra.sandbox import Confinement
from tests.landlock import nested

HOSTS = sandbox.isolation().host_processes
needs_hosts = pytest.mark.skipif(not HOSTS, reason="needs bwrap and Landlock ABI >= 6")
SRC = Path(hostprocs.__file__).resolve().parents[2]


def run_plain(tmp: Path, script: str, *args: str, timeout_s: float = 20.0) -> process.ChildRun:
    """Run ``script`` as a replay's test process is run (``Confinement.plain``)."""
    argv = [sys.executable, "-c", textwrap.dedent(script), *args]
    launch_ = process.Launch(
        argv, {}, "token", timeout_s, tmp, dict(os.environ), Confinement(tmp, plain=True)
    )
    return process.run_child(launch_)


def lines(run: process.ChildRun) -> dict[str, str]:
    out = run.stdout_tail.decode("utf-8", "replace").splitlines()
    return dict(line.split(" ", 1) for line in out if " " in line)


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def still_alive(pids: list[int], within_s: float) -> list[int]:
    """The ``pids`` still alive once ``within_s`` has passed (or sooner, once none is)."""
    end = time.monotonic() + within_s
    while [pid for pid in pids if alive(pid)] and time.monotonic() < end:
        time.sleep(0.01)
    return [pid for pid in pids if alive(pid)]


def test_landlock_abi_is_probed() -> None:
    abi = hostprocs.landlock_abi()
    assert abi >= 0
    layers = sandbox.isolation()
    assert layers.host_processes == (layers.sandboxed and abi >= hostprocs.SCOPES_ABI)


@needs_hosts
@pytest.mark.slow
def test_a_plain_run_sees_the_host_process_table_and_cannot_touch_it(tmp_path: Path) -> None:
    script = """\
        import errno, os, sys
        gate = int(sys.argv[1])
        def outcome(act):
            try:
                act()
            except OSError as e:
                return errno.errorcode[e.errno]
            return "ok"
        print("pid1", open("/proc/1/cmdline", "rb").read().hex())
        print("count", sum(1 for e in os.listdir("/proc") if e.isdigit()))
        print("pid", os.getpid(), flush=True)
        print("pidns", os.readlink("/proc/self/ns/pid"), flush=True)
        parent = open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\\0")
        print("parent", parent[3].decode())
        print("gate_cmdline", outcome(lambda: open(f"/proc/{gate}/cmdline", "rb").read()))
        print("gate_environ", outcome(lambda: open(f"/proc/{gate}/environ", "rb").read()))
        print("gate_fds", outcome(lambda: os.readlink(f"/proc/{gate}/fd/0")))
        print("gate_mem", outcome(lambda: open(f"/proc/{gate}/mem", "rb").read(1)))
        print("gate_signal", outcome(lambda: os.kill(gate, 0)))
        print("pid1_signal", outcome(lambda: os.kill(1, 0)))
        print("sysctl", outcome(lambda: open("/proc/sys/kernel/hostname", "w").write("x")))
        print("own_environ", outcome(lambda: open("/proc/self/environ", "rb").read()))
    """
    run = run_plain(tmp_path, script, str(os.getpid()))
    seen = lines(run)
    assert run.returncode == 0, run.stderr_tail
    # What a plain run sees: the host's pid 1, its processes, a pid of the host's.
    assert bytes.fromhex(seen["pid1"]) == Path("/proc/1/cmdline").read_bytes()
    assert int(seen["count"]) >= 10
    # The host's own pid namespace (pids wrap, so no order between them is promised).
    assert seen["pidns"] == os.fspath(Path("/proc/self/ns/pid").readlink())
    assert int(seen["pid"]) not in (1, 2, os.getpid())
    assert seen["parent"] == os.fspath(hostprocs.LAUNCHER)  # the declared difference
    # What it may not do to the processes outside its run.
    assert seen["gate_cmdline"] == "ok"  # world-readable, as on any host
    assert (seen["gate_environ"], seen["gate_fds"], seen["gate_mem"]) == ("EACCES",) * 3
    assert (seen["gate_signal"], seen["pid1_signal"]) == ("EPERM", "EPERM")
    assert seen["sysctl"] == "EROFS"
    assert seen["own_environ"] == "ok"


DAEMON = """\
    import os, signal, sys, time
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        daemon = os.fork()
        if daemon == 0:
            time.sleep(600)
            os._exit(0)
        os.write(write, str(daemon).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    os.close(write)
    print("daemons", os.read(read, 64).decode(), flush=True)
    if sys.argv[1] == "hang":
        time.sleep(600)
    if sys.argv[1] == "kill-launcher":
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(600)
"""


@needs_hosts
@pytest.mark.slow
@pytest.mark.parametrize("how", ["end", "hang", "kill-launcher"])
def test_a_daemon_a_test_starts_does_not_outlive_the_run(tmp_path: Path, how: str) -> None:
    # A double fork and setsid: out of the run's process group, which the gate kills.
    run = run_plain(tmp_path, DAEMON, how, timeout_s=4.0)
    daemons = [int(p) for p in lines(run)["daemons"].split()]
    assert daemons, run.stderr_tail
    assert run.timed_out == (how == "hang")
    assert not [pid for pid in daemons if alive(pid)]


@needs_hosts
@pytest.mark.slow
def test_the_sweep_kills_what_the_process_group_kill_missed(tmp_path: Path) -> None:
    launched = hostprocs.Launched.open()
    layers = sandbox.isolation()
    confinement = Confinement(tmp_path, plain=True)
    argv = [sys.executable, "-c", textwrap.dedent(DAEMON), "hang"]
    proc = subprocess.Popen(
        layers.command(argv, confinement, tmp_path, launched),
        pass_fds=launched.pass_fds, start_new_session=True, stdout=subprocess.PIPE,
    )  # fmt: skip
    launched.started()
    try:
        assert proc.stdout is not None
        daemons = [int(p) for p in proc.stdout.readline().split()[1:]]
        net = launched.net_namespace()
        assert net is not None and daemons
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        # The group is gone; the daemon, in its own session, is not.
        assert [pid for pid in daemons if alive(pid)] == daemons
        assert set(daemons) <= set(hostprocs.members(net))
        assert hostprocs.sweep(net) >= len(daemons)
        assert hostprocs.members(net) == []
        # A process killed leaves its namespaces before its state reads "Z": between the
        # two it is in no namespace and not yet a zombie (CI saw this once). It is dying,
        # not running: allow the kernel a moment to finish.
        assert not still_alive(daemons, within_s=5.0)
    finally:
        launched.close()
        if proc.stdout is not None:
            proc.stdout.close()


# --- the launcher on its own (no bwrap): status, environment, exit ------------------------


def run_launcher(argv: list[str], *, wrap: bool = False, **kw: object) -> tuple[int, bytes]:
    """Run the launcher on ``argv``; return its exit status and what it said on its
    status descriptor. With ``wrap``, under the kernel's 16 stacked domains."""
    read, write = os.pipe()
    cmd = hostprocs.launcher_argv(sys.executable, write, argv)
    try:
        proc = subprocess.run(
            nested(cmd) if wrap else cmd, pass_fds=(write,), check=False,
            capture_output=True, **kw,  # type: ignore[call-overload]
        )  # fmt: skip
    finally:
        os.close(write)
    with os.fdopen(read, "rb") as f:
        return proc.returncode, f.read()


def test_the_launcher_refuses_to_run_the_tests_unconfined(tmp_path: Path) -> None:
    if hostprocs.landlock_abi() < hostprocs.SCOPES_ABI:
        pytest.skip("needs Landlock ABI >= 6")
    marker = tmp_path / "ran"
    code, said = run_launcher(["/bin/touch", os.fspath(marker)], wrap=True)
    assert code == launch.REFUSED
    assert said.startswith(b"0landlock_restrict_self")
    assert not marker.exists()


def test_the_launcher_runs_the_command_as_it_was_given(tmp_path: Path) -> None:
    if hostprocs.landlock_abi() < hostprocs.SCOPES_ABI:
        pytest.skip("needs Landlock ABI >= 6")
    script = (
        "import os, sys\n"
        "print(open('/proc/self/environ', 'rb').read().hex(), os.getcwd())\n"
        "sys.exit(int(sys.argv[1]))\n"
    )
    env = {"B": "2", "LANG": "C", "A": "1", "PYTHONHASHSEED": "5"}
    read, write = os.pipe()
    proc = subprocess.run(
        hostprocs.launcher_argv(sys.executable, write, [sys.executable, "-c", script, "3"]),
        pass_fds=(write,), env=env, cwd=tmp_path, capture_output=True, check=False,
    )  # fmt: skip
    os.close(write)
    with os.fdopen(read, "rb") as f:
        assert f.read() == b"1"
    assert proc.returncode == 3, proc.stderr
    block, cwd = proc.stdout.decode().split()
    # The start-up block as the launcher got it, in order (the seed last), nothing added.
    assert bytes.fromhex(block) == b"B=2\0LANG=C\0A=1\0PYTHONHASHSEED=5\0"
    assert cwd == os.fspath(tmp_path)
    # The signals ignored as a plain start has them (the launcher's interpreter ignores
    # SIGPIPE and SIGXFSZ; an exec would keep that).
    out = tmp_path / "ignored"
    status = ["/bin/sh", "-c", f"grep ^SigIgn /proc/self/status > {out}"]
    subprocess.run(status, check=True)
    plain = out.read_text()
    assert run_launcher(status) == (0, b"1")
    assert out.read_text() == plain


def test_the_launcher_dies_of_the_signal_its_test_process_died_of() -> None:
    if hostprocs.landlock_abi() < hostprocs.SCOPES_ABI:
        pytest.skip("needs Landlock ABI >= 6")
    script = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    code, said = run_launcher([sys.executable, "-c", script])
    assert (code, said) == (-signal.SIGTERM, b"1")


@needs_hosts
@pytest.mark.slow
def test_a_gate_that_cannot_confine_falls_back_or_refuses(tmp_path: Path) -> None:
    # Under 16 stacked domains the probe's launcher cannot confine itself: the process keeps
    # a replay's test process in a pid namespace of its own. A run forced onto the host's
    # process table there is refused, and its command never runs.
    marker = tmp_path / "ran"
    script = f"""\
        import dataclasses, json, os, sys
        from pathlib import Path
        from patchlane.infra import hostprocs, process, sandbox
        layers = sandbox.isolation()
        forced = dataclasses.replace(layers, host_processes=True)
        tmp = Path({os.fspath(tmp_path)!r})
        launch = process.Launch(
            ["/bin/touch", {os.fspath(marker)!r}], {{}}, "t", 20.0, tmp, dict(os.environ),
            sandbox.Confinement(tmp, plain=True), forced,
        )
        try:
            process.run_child(launch)
            refused = None
        except hostprocs.ConfinementRefused as e:
            refused = str(e)
        print(json.dumps([layers.kind, layers.host_processes, refused]))
    """
    env = {**os.environ, "PYTHONPATH": os.fspath(SRC)}
    proc = subprocess.run(
        nested([sys.executable, "-c", textwrap.dedent(script)]),
        env=env, capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    kind, hosts, refused = json.loads(proc.stdout.decode().splitlines()[-1])
    assert (kind, hosts) == ("bwrap", False)
    assert refused is not None and "landlock_restrict_self" in refused
    assert not marker.exists()


def test_a_run_on_the_host_table_needs_its_pipes(tmp_path: Path) -> None:
    layers = dataclasses.replace(sandbox.isolation(), host_processes=True)
    if not layers.sandboxed:
        pytest.skip("needs bwrap")
    with pytest.raises(ValueError, match="launcher's pipes"):
        layers.command(["true"], Confinement(tmp_path, plain=True), tmp_path)
    # Every other child keeps its own pid namespace and /proc.
    argv = layers.command(["true"], Confinement(tmp_path), tmp_path)
    assert "--unshare-all" in argv and "--disable-userns" not in argv
    # Its own /proc, mounted over the root's bind (which would hide it if it came first).
    assert argv.index("--proc") > argv.index("--ro-bind")


def test_without_bwrap_nothing_runs_under_the_launcher(tmp_path: Path) -> None:
    # PATCHLANE_BWRAP=none (or no bwrap): the fallback's layers, no launcher, no pipes.
    fallback = sandbox.Isolation("none", "test", host_processes=True)
    plain = Confinement(tmp_path, plain=True)
    assert not fallback.launches(plain)
    assert fallback.command(["true"], plain, tmp_path) == ["true"]
