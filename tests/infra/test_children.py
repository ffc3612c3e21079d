"""Ctrl-C: a real ``patchlane`` process sent SIGINT while a property child runs exits 130
with one line, and leaves no process behind (``patchlane.infra.children``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.gitrepo import GitRepo, without_progress
from tests.lanes.property import project as P

SLEEPY_PROP = """\
import time


def prop_sleeps(seed, n=200):
    time.sleep(120)
"""

# Runs patchlane as a child subreaper (PR_SET_CHILD_SUBREAPER), so that any process it
# leaves behind is re-parented here and can be seen: it waits for the step's progress line
# and for a descendant in a session of its own (the property child), sends SIGINT to
# patchlane alone (as a terminal would not reach that child), and reports what is left.
HARNESS = textwrap.dedent(
    """\
    import ctypes, json, os, signal, subprocess, sys, time

    assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0

    def table():
        rows = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat") as f:
                        text = f.read()
                except OSError:
                    continue
                fields = text[text.rindex(")") + 2 :].split()
                rows[int(name)] = (fields[0], int(fields[1]), int(fields[3]))
        return rows  # pid -> (state, ppid, session)

    def descendants(root, rows):
        found, todo = set(), [root]
        while todo:
            parent = todo.pop()
            for pid, (_, ppid, _) in rows.items():
                if ppid == parent and pid not in found:
                    found.add(pid)
                    todo.append(pid)
        return found

    argv, cwd = json.loads(sys.argv[1])
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    before = []
    for line in proc.stderr:
        before.append(line.decode())
        if "property lane ..." in line.decode():
            break
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        rows = table()
        own = rows.get(proc.pid, ("", 0, 0))[2]
        if any(rows[p][2] != own for p in descendants(proc.pid, rows) if p in rows):
            break
        time.sleep(0.05)
    else:
        raise SystemExit("no child in a session of its own appeared")
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    alive = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        rows = table()
        alive = [p for p, (state, ppid, _) in rows.items() if ppid == os.getpid() and state != "Z"]
        if not alive:
            break
        time.sleep(0.05)
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    print(json.dumps({"rc": proc.returncode, "stderr": "".join(before) + err.decode(),
                      "alive": alive}))
    """
)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER")
@pytest.mark.parametrize(
    "command",
    [("property", "--mutants", "0"), ("gate", "--mutants", "0")],
    ids=lambda c: c[0],
)
def test_ctrl_c_is_exit_130_one_line_and_no_child_left(
    repo: GitRepo, command: tuple[str, ...]
) -> None:
    P.make(repo, props=SLEEPY_PROP, timeout_s=300)
    P.patch(repo, {"src/shop/__init__.py": P.SHOP + "\nX = 1\n"})  # a patch for the gate
    argv = [sys.executable, "-m", "patchlane", *command]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(
        [sys.executable, "-c", HARNESS, json.dumps([argv, os.fspath(repo.path)])],
        env=env,
        capture_output=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    result = json.loads(proc.stdout)
    lines = without_progress([x for x in result["stderr"].splitlines() if x])
    assert result["rc"] == 130, result["stderr"]
    assert lines == ["patchlane: interrupted"], result["stderr"]
    assert "Traceback" not in result["stderr"]
    assert result["alive"] == [], result
