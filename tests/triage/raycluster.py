"""One real local Ray cluster for the slow tier (2 CPUs), started by a child process of its
own: the child calls ``ray.init`` (a head node of its own, no dashboard), prints the
cluster's address and holds it until its stdin closes, then shuts it down. Tests connect to
it as users connect to an existing cluster (``RayEngine(address)``); only the processes of
this cluster are ever stopped or killed (found under the child, never by name)."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import patchlane

# The child: start the cluster as the engine starts its own, say where it is, hold it until stdin closes.
_HOLD = """
import logging, sys
import ray
ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
         logging_level=logging.WARNING, _temp_dir=sys.argv[1])
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()
ray.shutdown()
"""


@dataclass
class Cluster:
    """A running local cluster: its ``address`` and the child holding it."""

    address: str
    holder: subprocess.Popen[str]

    def descendants(self) -> list[int]:
        """Return the pids of every process under the holder (raylet, GCS, workers)."""
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            ppid = next(int(x.split()[1]) for x in status.splitlines() if x.startswith("PPid:"))
            children.setdefault(ppid, []).append(int(entry.name))
        found, todo = [], [self.holder.pid]
        while todo:
            pid = todo.pop()
            for child in children.get(pid, []):
                found.append(child)
                todo.append(child)
        return found

    def workers_titled(self, title: str) -> list[int]:
        """Return the pids of this cluster's worker processes whose title starts with
        ``title`` (Ray names a worker running a task ``ray::<task name>``)."""
        pids = []
        for pid in self.descendants():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.startswith(title.encode()):
                pids.append(pid)
        return pids

    def stop(self) -> None:
        """Close the holder's stdin (it shuts the cluster down) and wait for it; past 60 s,
        kill the holder's own process group."""
        assert self.holder.stdin is not None
        self.holder.stdin.close()
        try:
            self.holder.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.holder.pid, signal.SIGKILL)
            self.holder.wait()


def start_cluster(temp: Path) -> Cluster:
    """Start a local cluster with 2 CPUs whose workers import this checkout's patchlane;
    returns it once its address is known (raises ``RuntimeError`` if it does not start)."""
    src = str(Path(patchlane.__file__).parents[1])
    # Token authentication, as Ray starts a local cluster by default, with the cluster's
    # token in the temp dir (not the user's ~/.ray): the holder and the tests' drivers
    # (this process) read it from there.
    token = temp / "auth_token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN_PATH"] = str(token)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(temp / "ray")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=(temp / "holder.log").open("w"),
        text=True,
        env=env,
        cwd=temp,
        start_new_session=True,
    )
    assert holder.stdout is not None
    started = time.monotonic()
    address = holder.stdout.readline().strip()
    if not address:
        holder.wait()
        log = (temp / "holder.log").read_text()[-2000:]
        raise RuntimeError(
            f"the Ray cluster did not start in {time.monotonic() - started:.0f}s: {log}"
        )
    return Cluster(address, holder)
