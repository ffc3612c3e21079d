"""The candidates of a triage run: what the command line names, read strictly and named.

An argument is, in this order: a directory (every ``*.diff`` and ``*.patch`` file in it, by
name), a ``.jsonl`` file of predictions, another file (one diff: unified, ``git diff
--binary`` or ``git format-patch``/mbox output), or else a git ref. Each candidate gets a
name that is safe as one directory name and unique within the run (case-insensitively, for
file systems that fold case).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchlane.errors import InputError, UsageError
from patchlane.inputs.jsonio import loads_strict

PATCH_SUFFIXES = (".diff", ".patch")
PREDICTION_KEYS = ("instance_id", "model_name_or_path", "model_patch")
# Names the run's own files take in the out dir; a candidate never takes them.
RESERVED = frozenset({"triage.md", "triage.jsonl"})
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
_MAX_NAME = 80


class PredictionsError(InputError):
    """A predictions JSONL line is malformed (the message names the file and the line)."""


@dataclass(frozen=True)
class Candidate:
    """One patch to gate: a ref (``ref``), or a diff's bytes (``patch``; ``b""`` for a
    prediction with an empty ``model_patch``). ``source`` says where it came from as the
    user would find it again: the ref, the diff file, or ``FILE:LINE`` of a prediction."""

    name: str
    source: str
    ref: str | None = None
    patch: bytes | None = None

    @property
    def kind(self) -> str:
        """``ref`` or ``patch``."""
        return "ref" if self.ref is not None else "patch"


def safe_name(text: str) -> str:
    """Return ``text`` as one file name: runs of other characters than letters, digits,
    ``.``, ``_``, ``+`` and ``-`` become ``-``; no leading dot or dash; at most 80
    characters; ``candidate`` when nothing is left."""
    name = _UNSAFE.sub("-", text).lstrip(".-")[:_MAX_NAME].rstrip(".-")
    return name or "candidate"


def unique_names(wanted: Iterable[str]) -> list[str]:
    """Return ``wanted`` made unique in order: a repeat (ignoring case) or a reserved name
    gets ``-2``, ``-3``, ... appended."""
    taken = {n.lower() for n in RESERVED}
    out = []
    for name in wanted:
        chosen, n = name, 1
        while chosen.lower() in taken:
            n += 1
            chosen = f"{name}-{n}"
        taken.add(chosen.lower())
        out.append(chosen)
    return out


def collect(arguments: Sequence[str]) -> list[Candidate]:
    """Return the candidates the command-line ``arguments`` name, uniquely named, in order.

    Raises ``UsageError`` for a directory without diffs or no candidate at all,
    ``InputError`` for a file that cannot be read, ``PredictionsError`` for a malformed
    predictions line. Refs are not resolved here."""
    found: list[Candidate] = []
    for arg in arguments:
        found.extend(_from_argument(arg))
    if not found:
        raise UsageError("triage: no candidate (give refs, diff files, directories or a .jsonl)")
    names = unique_names(c.name for c in found)
    return [Candidate(n, c.source, c.ref, c.patch) for n, c in zip(names, found, strict=True)]


def _from_argument(arg: str) -> list[Candidate]:
    path = Path(arg)
    if path.is_dir():
        diffs = sorted(
            (p for p in path.iterdir() if p.suffix in PATCH_SUFFIXES and p.is_file()),
            key=lambda p: p.name,
        )
        if not diffs:
            raise UsageError(f"{arg}: a directory without any *.diff or *.patch file")
        return [_diff_file(p) for p in diffs]
    if path.is_file() and path.suffix == ".jsonl":
        return read_predictions(path)
    if path.is_file():
        return [_diff_file(path)]
    return [Candidate(safe_name(arg), arg, ref=arg)]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise InputError(os.fspath(path), f"cannot read: {e.strerror or e}") from e


def _diff_file(path: Path) -> Candidate:
    name = path.name
    for suffix in PATCH_SUFFIXES:
        name = name.removesuffix(suffix)
    return Candidate(safe_name(name), os.fspath(path), patch=_read(path))


@dataclass(frozen=True)
class Prediction:
    """One line of a predictions JSONL: its ``instance_id``, ``model`` (the
    ``model_name_or_path``), ``patch`` (the ``model_patch`` as UTF-8 bytes) and ``source``
    (``FILE:LINE``)."""

    instance_id: str
    model: str
    patch: bytes
    source: str


def read_predictions(path: Path) -> list[Candidate]:
    """Return one candidate per non-blank line of the predictions JSONL ``path``, named
    ``<model>__<instance_id>``.

    Each line must be a JSON object with a non-empty string ``instance_id``, a non-empty
    string ``model_name_or_path`` and a string ``model_patch`` (empty: a candidate that
    is reported as an empty patch); other keys are allowed (harnesses add their own).
    Raises ``PredictionsError`` naming the first malformed line."""
    return [
        Candidate(
            safe_name(f"{safe_name(p.model)}__{safe_name(p.instance_id)}"),
            p.source,
            patch=p.patch,
        )
        for p in read_prediction_records(path)
    ]


def read_prediction_records(path: Path) -> list[Prediction]:
    """Return one ``Prediction`` per non-blank line of the predictions JSONL ``path``, by
    the rules of ``read_predictions``. Raises ``InputError`` when the file cannot be read,
    ``PredictionsError`` naming the first malformed line."""
    label = os.fspath(path)
    data = _read(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise PredictionsError(label, "not UTF-8 text", line) from e
    out = []
    for number, entry in enumerate(text.split("\n"), 1):
        if entry.strip():
            out.append(_prediction(label, number, entry))
    if not out:
        raise PredictionsError(label, "no prediction in the file (one JSON object per line)")
    return out


def json_object(line: str, bad: Callable[[str], InputError]) -> dict[str, Any]:
    """Return ``line`` read as one strict JSON object (no duplicate keys, no NaN). Raises
    ``bad(what)`` (an error that names the file and line) for anything else."""

    try:
        value = loads_strict(line)
    except (ValueError, RecursionError) as e:
        raise bad(f"not one JSON object on this line ({str(e)[:120]})") from None
    if not isinstance(value, dict):
        raise bad(f"a JSON {type(value).__name__} where an object is expected")
    return value


def _prediction(label: str, number: int, line: str) -> Prediction:
    def bad(what: str) -> PredictionsError:
        return PredictionsError(label, what, number)

    value = json_object(line, bad)
    for key in PREDICTION_KEYS:
        if key not in value:
            raise bad(f"missing key {key!r} (a prediction has {', '.join(PREDICTION_KEYS)})")
        if not isinstance(value[key], str):
            raise bad(f"{key} must be a string, not {type(value[key]).__name__}")
        # A lone surrogate escape (``"\\ud800"``) is valid JSON but no text: every
        # string is written again (a row, a folder name, a report), as UTF-8.
        try:
            value[key].encode("utf-8")
        except UnicodeEncodeError:
            raise bad(f"{key} holds a lone surrogate escape: not text") from None
    instance, model, patch = (value[k] for k in PREDICTION_KEYS)
    if not instance.strip() or not model.strip():
        raise bad("instance_id and model_name_or_path must not be empty")
    patch_bytes = patch.encode("utf-8")
    return Prediction(instance, model, patch_bytes, f"{label}:{number}")
