"""GitHub Actions workflow commands and environment files, written by the rules GitHub's
own toolkit follows (``@actions/core``): annotations (``::error file=F,line=N::message``),
step outputs (``$GITHUB_OUTPUT``) and the job summary (``$GITHUB_STEP_SUMMARY``).

Everything quoted from the evidence is the patch's text (file names, node ids, failure
messages): escaping keeps it from ending a command early, from forging another command on a
line of its own, or from writing a second output.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

LEVELS = ("error", "warning", "notice")


def escape_data(text: str) -> str:
    """Return ``text`` escaped as a command's message: ``%``, CR and LF (GitHub shows a
    message's line breaks again)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Return ``text`` escaped as a command's property value (``file``, ``title``): as a
    message, and also ``:`` and ``,``, which end a property."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def printable(text: str) -> str:
    """Return ``text`` with every control character but LF and CR escaped (``\\x1b``), and
    bytes that are not UTF-8 (lone surrogates) as ``\\udcXX``: an escape sequence in a
    quoted message cannot recolour or hide the log around it."""
    out = []
    for char in text:
        if char in "\n\r" or (char.isprintable() and not 0xD800 <= ord(char) <= 0xDFFF):
            out.append(char)
        else:
            out.append(ascii(char)[1:-1])
    return "".join(out)


@dataclass(frozen=True)
class Annotation:
    """One annotation: its level (``error``, ``warning`` or ``notice``), message, title,
    and where it points (a path relative to the workspace, and a line), when it does."""

    level: str
    message: str
    title: str | None = None
    file: str | None = None
    line: int | None = None

    def command(self) -> str:
        """Return the workflow command that makes this annotation, as one line."""
        props = []
        if self.file is not None:
            props.append(f"file={escape_property(printable(self.file))}")
            if self.line is not None:
                props.append(f"line={self.line}")
        if self.title:
            props.append(f"title={escape_property(printable(self.title))}")
        head = f"::{self.level} {','.join(props)}" if props else f"::{self.level}"
        return f"{head}::{escape_data(printable(self.message))}"


def output_entry(name: str, value: str) -> str:
    """Return the ``$GITHUB_OUTPUT`` lines that set output ``name`` to ``value``:
    ``name=value`` for one line, else the multiline form (``name<<DELIMITER``) with a random
    delimiter that the value does not contain."""
    if "\n" not in value and "\r" not in value:
        return f"{name}={value}\n"
    delimiter = f"ghadelimiter_{uuid.uuid4()}"
    while delimiter in value:  # pragma: no cover - a random UUID in the patch's text
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def append_env_file(variable: str, text: str) -> bool:
    """Append ``text`` to the file the environment variable ``variable`` names
    (``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``); return whether there was one. Outside
    GitHub Actions the variable is unset and nothing is written."""
    target = os.environ.get(variable)
    if not target:
        return False
    with Path(target).open("a", encoding="utf-8", errors="backslashreplace", newline="") as f:
        f.write(text)
    return True
