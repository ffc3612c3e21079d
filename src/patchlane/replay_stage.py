"""The gate's replay stage: select the slice, get a receipt (here or from a command), verify it.

Replay runs only when every local lane is green. ``--replay none`` stops at ``undecided``;
``local`` runs the slice here, on the head commit materialised from git; any other value is a
command with ``{slice}`` and ``{receipt}`` placeholders that submits the slice to the user's
own runner or a hosted one and leaves a receipt behind. Whatever comes back is verified
before it is believed; a command that fails or leaves no receipt is an unreachable host
(``undecided``), never a pass.
"""

from __future__ import annotations

import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchlane.classify import Classification
from patchlane.errors import UsageError
from patchlane.jsonio import atomic_write_bytes
from patchlane.ui import Output, one_line

RUN_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class ReplayOptions:
    mode: str
    seed: int | None
    failure_log: frozenset[str]
    public_key: Path | None
    slice_path: Path
    receipt_path: Path


def check_mode(mode: str) -> None:
    """Raise ``UsageError`` for a ``--replay`` command without both placeholders."""
    if mode in ("none", "local"):
        return
    missing = [p for p in ("{slice}", "{receipt}") if p not in mode]
    if missing:
        raise UsageError(
            f"--replay {mode!r}: a replay command needs the placeholders {{slice}} and "
            f"{{receipt}} (missing {', '.join(missing)}); or use 'none' or 'local'"
        )


def _report(mode: str, outcome: str, reason: str, **extra: Any) -> dict[str, Any]:
    return {
        "lane": "replay",
        "status": "error",
        "reason": reason,
        "outcome": outcome,
        "mode": mode,
        **extra,
    }


def replay(
    repo: Path,
    cls: Classification,
    opts: ReplayOptions,
    local_green: bool,
    freeze_report: dict[str, Any],
    out: Output,
) -> dict[str, Any]:
    """Return the replay lane's report (and write the slice and receipt files it used)."""
    if opts.mode == "none":
        return _report("none", "not_run", "replay not run (--replay none)")
    if not local_green:
        return _report(
            opts.mode, "not_run", "replay not run: a local lane is red or gave no evidence"
        )
    seed = opts.seed
    if seed is None:
        raise UsageError("--replay needs a seed: pass --seed N or set lanes.property.seed")
    from patchlane.lanes.replay.select import select_slice

    review_map = cls.map_source.review_map
    out.progress("replay: selecting the slice")
    selection = select_slice(
        repo,
        review_map,
        base=cls.base,
        head=cls.head,
        merge_base=cls.merge_base,
        changed_paths=cls.changed_paths,
        failure_log=opts.failure_log,
        all_tests=False,
        out=out,
    )
    atomic_write_bytes(opts.slice_path, selection.slice_bytes)
    facts = {
        "slice_sha256": selection.sha256,
        "slice_count": len(selection.nodeids),
        "suite_size": selection.suite_size,
        "private": [{"path": p, "why": why} for p, why in selection.private],
    }
    if not selection.nodeids:
        return _report(
            opts.mode,
            "empty",
            "empty slice: no test reaches the change, and an empty set is never evidence",
            **facts,
        )
    if opts.mode != "local" and selection.private:
        path, why = selection.private[0]
        return _report(
            opts.mode,
            "private",
            f"the slice needs a private file ({path}: {why}): run it locally (--replay local) or on your own runner",
            **facts,
        )
    problem = None
    if opts.mode == "local":
        _run_here(repo, cls, opts, seed, selection.nodeids, selection.sha256, out)
    else:
        # A receipt that came back is evidence whatever the command exited with (a runner
        # that ran the slice and saw a failure may well exit 1); it is verified below.
        problem = _run_command(repo, opts, out)
    if not opts.receipt_path.is_file():
        return _report(opts.mode, "unreachable", problem or "no receipt came back", **facts)
    return _verify(cls, opts, seed, selection.slice_bytes, selection.sha256, freeze_report, facts)


def _run_here(
    repo: Path,
    cls: Classification,
    opts: ReplayOptions,
    seed: int,
    nodeids: tuple[str, ...],
    digest: str,
    out: Output,
) -> None:
    from patchlane.lanes.replay.run import run_slice
    from patchlane.lanes.replay.signing import configured_private_key, sign
    from patchlane.tree import materialise

    freeze_path = opts.receipt_path.parent / "freeze-report.json"
    with tempfile.TemporaryDirectory(prefix="patchlane-replay-head-") as tmp:
        # The head commit's bytes, not the work tree: the receipt names that commit.
        tree = Path(tmp) / "head"
        materialise(repo, cls.head, tree)
        out.progress(f"replay: running {len(nodeids)} node id(s) with pytest")
        result = run_slice(
            tree,
            nodeids,
            digest,
            seed=seed,
            head=cls.head,
            host_role="local",
            freeze_report=freeze_path if freeze_path.is_file() else None,
            timeout_s=RUN_TIMEOUT_S,
        )
    receipt = result.receipt
    key = configured_private_key(None)
    if key is not None:
        receipt = sign(receipt, key)
    atomic_write_bytes(opts.receipt_path, receipt.render())


def _run_command(repo: Path, opts: ReplayOptions, out: Output) -> str | None:
    """Run the user's replay command; return why it failed, or ``None``."""
    opts.receipt_path.unlink(missing_ok=True)
    command = opts.mode.replace("{slice}", shlex.quote(str(opts.slice_path))).replace(
        "{receipt}", shlex.quote(str(opts.receipt_path))
    )
    out.progress(f"replay: {command}")
    try:
        # The command is the user's own (how they reach their runner); it runs as a shell line.
        proc = subprocess.run(  # noqa: S602
            command, shell=True, cwd=repo, capture_output=True, timeout=RUN_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return f"the replay command did not finish within {RUN_TIMEOUT_S:.0f} s"
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip().splitlines()
        last = one_line(tail[-1]) if tail else "no output"
        return f"the replay command exited {proc.returncode}: {last}"
    return None


def _verify(
    cls: Classification,
    opts: ReplayOptions,
    seed: int,
    slice_bytes: bytes,
    digest: str,
    freeze_report: dict[str, Any],
    facts: dict[str, Any],
) -> dict[str, Any]:
    from patchlane.lanes.replay.signing import load_public_key
    from patchlane.lanes.replay.verify import replay_report, verify_receipt

    review_map = cls.map_source.review_map
    public_key = load_public_key(opts.public_key) if opts.public_key is not None else None
    verification = verify_receipt(
        slice_bytes,
        opts.receipt_path.read_bytes(),
        freeze_report,
        seed=seed,
        head=cls.head,
        # The base's map decides whether a signature is required, never the patch's.
        require_signature=review_map.replay.require_signature,
        public_key=public_key,
    )
    report = replay_report(verification, slice_sha256=digest, seed=seed, head=cls.head)
    return {**report, "mode": opts.mode, **{k: v for k, v in facts.items() if k not in report}}
