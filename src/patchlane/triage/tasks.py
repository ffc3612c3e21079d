"""The inputs of a tasks run (``patchlane triage --tasks``), read strictly at the edge: the
tasks file (one base a line, named by ``instance_id``), the predictions (SWE-bench's
``{instance_id, model_name_or_path, model_patch}``), and their grouping into units of work,
one per distinct base (docs/reference/tasks-file.md).

Every malformed line is an ``InputError`` naming ``FILE:LINE`` (exit 2, one line).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.errors import InputError, UsageError
from patchlane.triage.candidates import (
    RESERVED,
    Prediction,
    json_object,
    read_prediction_records,
    safe_name,
    unique_names,
)
from patchlane.triage.units import BaseSpec, Pair, Unit, pair_key

REQUIRED = ("instance_id", "repo", "base_commit")
OPTIONAL = ("setup", "python", "map", "test_cmd")
# The files a tasks run writes beside the evidence folders: an instance never takes them.
RUN_FILES = RESERVED | {"swebench-report.json", "accepted.jsonl"}
_COMMIT = re.compile(r"[0-9a-fA-F]{40}")
# git's own rule (``url.c``/``connect.c``): a URL has a scheme, or is scp-like
# ``host:path`` with no slash before the first colon.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_SCP = re.compile(r"[^/:]+:")
_MAX_MAP = 1 << 20


class TasksError(InputError):
    """A tasks file line is malformed (the message names the file and the line)."""


@dataclass(frozen=True)
class Task:
    """One line of a tasks file: its ``instance_id``, the ``base`` it names, and ``source``
    (``FILE:LINE``)."""

    instance_id: str
    base: BaseSpec
    source: str


def is_url(repo: str) -> bool:
    """Return whether git reads ``repo`` as a URL (``scheme://...`` or scp-like
    ``host:path``) rather than a local path."""
    return bool(_SCHEME.match(repo)) or (bool(_SCP.match(repo)) and not repo.startswith((".", "~")))


def read_tasks(path: Path) -> list[Task]:
    """Return the tasks of the tasks file ``path``, one per non-blank line, in order.

    A line is a JSON object with non-empty strings ``instance_id``, ``repo`` (a URL git can
    fetch, or a path: relative ones are taken from the tasks file's folder) and
    ``base_commit`` (40 hex digits), and optionally ``setup`` or ``python`` (not both; non-
    empty strings), ``map`` (a review map's path, relative to the tasks file; read here)
    and ``test_cmd``. Raises ``TasksError`` naming the line for anything else: another key,
    a repeated ``instance_id``, a map that cannot be read; and for a file with no task."""
    label = os.fspath(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise TasksError(label, f"cannot read: {e.strerror or e}") from e
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TasksError(label, "not UTF-8 text", data[: e.start].count(b"\n") + 1) from e
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        task = _task(path, label, number, line)
        if task.instance_id in seen:
            raise TasksError(
                label,
                f"instance_id {task.instance_id!r} repeated (first on line "
                f"{seen[task.instance_id]}): one base per instance",
                number,
            )
        seen[task.instance_id] = number
        tasks.append(task)
    if not tasks:
        raise TasksError(label, "no task in the file (one JSON object per line)")
    return tasks


def _task(path: Path, label: str, number: int, line: str) -> Task:
    def bad(what: str) -> TasksError:
        return TasksError(label, what, number)

    value = json_object(line, bad)
    unknown = sorted(set(value) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        allowed = ", ".join(REQUIRED + OPTIONAL)
        raise bad(f"unknown key {unknown[0]!r} (a task has {allowed})")
    for key in REQUIRED:
        if key not in value:
            raise bad(f"missing key {key!r} (a task has {', '.join(REQUIRED)})")
    for key in REQUIRED + OPTIONAL:
        if key in value:
            _check_text(key, value[key], bad)
    if not _COMMIT.fullmatch(value["base_commit"]):
        raise bad(f"base_commit {value['base_commit'][:60]!r} is not a full commit id (40 hex)")
    if "setup" in value and "python" in value:
        raise bad("setup and python are alternatives: give one of them, not both")
    repo = value["repo"]
    if repo.startswith("-"):  # git would read it as an option
        raise bad(f"repo {repo[:60]!r} starts with '-': not a URL or path git can take")
    if not is_url(repo):
        repo = os.fspath(path.parent.absolute() / Path(repo).expanduser())
    map_text = _map(path, value["map"], bad) if "map" in value else None
    base = BaseSpec(
        repo=repo,
        base_commit=value["base_commit"].lower(),
        setup=value.get("setup"),
        python=value.get("python"),
        map_text=map_text,
        test_cmd=value.get("test_cmd"),
    )
    return Task(value["instance_id"], base, f"{label}:{number}")


def _check_text(key: str, text: object, bad: Callable[[str], TasksError]) -> None:
    """Raise ``bad(...)`` unless ``text`` is a non-empty string without NUL that is text
    (a lone surrogate escape is valid JSON, but nothing can write it again)."""
    if not isinstance(text, str):
        raise bad(f"{key} must be a string, not {type(text).__name__}")
    if not text.strip() or "\x00" in text:
        raise bad(f"{key} must be a non-empty string without NUL")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise bad(f"{key} holds a lone surrogate escape: not text") from None


def _map(tasks_file: Path, rel: str, bad: Callable[[str], TasksError]) -> str:
    where = tasks_file.parent / rel
    try:
        with where.open("rb") as f:
            data = f.read(_MAX_MAP + 1)
    except OSError as e:
        raise bad(f"map {rel!r}: cannot read: {e.strerror or e}") from None
    if len(data) > _MAX_MAP:
        raise bad(f"map {rel!r}: larger than {_MAX_MAP} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise bad(f"map {rel!r}: not UTF-8 text") from None


def read_predictions(paths: Sequence[Path]) -> list[Prediction]:
    """Return every prediction of the predictions JSONL files ``paths``, in order (the
    rules of ``candidates.read_predictions``). Raises ``UsageError`` when no file is given,
    ``InputError`` naming ``FILE:LINE`` for a malformed one."""
    if not paths:
        raise UsageError("triage --tasks: no predictions file (give one or more .jsonl)")
    out: list[Prediction] = []
    for path in paths:
        out.extend(read_prediction_records(path))
    return out


def group(
    tasks: Sequence[Task],
    predictions: Sequence[Prediction],
    version: str,
    gate_argv: Sequence[str],
) -> list[Unit]:
    """Return the units of work: one per distinct base (``BaseSpec.key``), in the order
    their first prediction comes, each with its pairs in the predictions' order. A pair is
    named ``<instance>/<model>``, both parts safe file names, unique in the run ignoring
    case (an instance never takes a run file's name). A task without predictions is not
    run. Raises ``InputError`` naming ``FILE:LINE`` of a prediction whose instance has no
    task."""
    by_id = {t.instance_id: t for t in tasks}
    for p in predictions:
        if p.instance_id not in by_id:
            file, _, line = p.source.rpartition(":")
            raise InputError(
                file,
                f"instance_id {p.instance_id[:80]!r} has no task in the tasks file",
                int(line),
            )
    folders = _instance_folders(p.instance_id for p in predictions)
    names = _pair_names(predictions, folders)
    units: dict[str, list[Pair]] = {}
    bases: dict[str, BaseSpec] = {}
    for p, name in zip(predictions, names, strict=True):
        base = by_id[p.instance_id].base
        bases.setdefault(base.key, base)
        key = pair_key(version, base, gate_argv, p.patch)
        pair = Pair(p.instance_id, p.model, name, p.source, p.patch, key)
        units.setdefault(base.key, []).append(pair)
    return [Unit(bases[k], tuple(pairs)) for k, pairs in units.items()]


def _instance_folders(instances: Iterable[str]) -> dict[str, str]:
    distinct = list(dict.fromkeys(instances))
    taken = {n.lower() for n in RUN_FILES}
    wanted = [safe_name(i) for i in distinct]
    chosen = []
    for name in wanted:  # unique_names, with the run's own files also out of reach
        pick, n = name, 1
        while pick.lower() in taken:
            n += 1
            pick = f"{name}-{n}"
        taken.add(pick.lower())
        chosen.append(pick)
    return dict(zip(distinct, chosen, strict=True))


def _pair_names(predictions: Sequence[Prediction], folders: dict[str, str]) -> list[str]:
    models: dict[str, list[int]] = {}
    for index, p in enumerate(predictions):
        models.setdefault(p.instance_id, []).append(index)
    names = [""] * len(predictions)
    for instance, indices in models.items():
        unique = unique_names(safe_name(predictions[i].model) for i in indices)
        for i, model in zip(indices, unique, strict=True):
            names[i] = f"{folders[instance]}/{model}"
    return names


def load(
    tasks_file: Path, prediction_files: Sequence[Path], version: str, gate_argv: Sequence[str]
) -> list[Unit]:
    """Return the units of work of ``tasks_file`` and ``prediction_files`` (``read_tasks``,
    ``read_predictions``, then ``group``); raises what they raise."""
    return group(read_tasks(tasks_file), read_predictions(prediction_files), version, gate_argv)
