"""The failure log (``--failure-log``): which test node ids failed on the last real run.

Two forms are read: pytest's JUnit XML (``--junitxml``) and text holding pytest's short
summary lines (``FAILED tests/x.py::test_y - msg``, ``ERROR tests/x.py::test_y``). Only
failures and errors count; node ids are kept exactly as pytest names them, parameters
included, because audit rule 5 and the replay slice match them exactly.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from patchlane.errors import InputError
from patchlane.inputs.committed import decode_utf8

# Colour codes, when pytest ran with --color=yes into a file.
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SUMMARY_RE = re.compile(r"^(?:FAILED|ERROR) (?P<rest>\S.*)$")
# A parametrised id may hold " - " inside its brackets (``test_p[a - b]``); the id then
# ends at the first ``]`` that is followed by `` - `` or the end of the line. The part
# before the brackets may not cross a `` - `` (that is already the message).
_BRACKETED_RE = re.compile(r"^(?P<id>(?:(?! - )[^\[])*::(?:(?! - )[^\[])*\[.*?\])(?: - .*)?$")
_DECLARATIONS = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


class FailureLogError(InputError):
    """The failure log cannot be read or parsed."""


def _text_nodeid(rest: str) -> str:
    m = _BRACKETED_RE.match(rest)
    return m["id"] if m else rest.split(" - ", 1)[0].rstrip()


def _looks_like_nodeid(nodeid: str) -> bool:
    """A node id (``path.py::name``) or a whole test file (a collection error)."""
    path = nodeid.split("::", 1)[0]
    return path.endswith(".py") and nodeid.isprintable()


def parse_text(text: str) -> frozenset[str]:
    """Return the node ids named on pytest's ``FAILED``/``ERROR`` summary lines."""
    out = set()
    for raw in text.splitlines():
        line = _ANSI_RE.sub("", raw).rstrip()
        m = _SUMMARY_RE.match(line)
        if m:
            nodeid = _text_nodeid(m["rest"])
            if _looks_like_nodeid(nodeid):
                out.add(nodeid)
    return frozenset(out)


def junit_nodeid(classname: str, name: str, file: str | None) -> str | None:
    """Return the pytest node id of a JUnit ``testcase``, or ``None`` when it names none.

    pytest writes ``classname`` as the node id's path without ``.py``, ``/`` turned into
    ``.``, followed by the class names. With a ``file`` attribute (``junit_family=xunit1``)
    the split between module and classes is exact; without it (the default ``xunit2``),
    the trailing parts that start with a capital letter are the classes (pytest collects
    classes named ``Test*``; test modules are lower case by convention).
    """
    if not name:
        return None
    parts = [p for p in classname.split(".") if p]
    if file and file.endswith(".py"):
        module = file[: -len(".py")].replace("/", ".")
        if classname == module:
            return f"{file}::{name}"
        if classname.startswith(module + "."):
            classes = classname[len(module) + 1 :].split(".")
            return "::".join([file, *classes, name])
    split = len(parts)
    while split > 0 and parts[split - 1][:1].isupper():
        split -= 1
    if split == 0:
        return None  # a collection error of a module carries no class path: no node id
    path = "/".join(parts[:split]) + ".py"
    return "::".join([path, *parts[split:], name])


def parse_junit(data: bytes, label: str) -> frozenset[str]:
    """Return the node ids of the ``testcase`` elements with a ``failure`` or ``error``.

    Raises ``FailureLogError`` for a DTD or entity declaration (refused before parsing: an
    entity can expand without bound), malformed XML, or a root that is not JUnit's.
    """
    text = data.decode("utf-8")  # the caller checked it is UTF-8
    m = _DECLARATIONS.search(text)
    if m or "\x00" in text:
        line = text.count("\n", 0, m.start()) + 1 if m else None
        what = f"<!{m[1].upper()}" if m else "a NUL byte"
        raise FailureLogError(label, f"{what} is refused in a JUnit XML failure log", line)
    try:
        # The declarations that make XML parsing unsafe (DTDs, entities) were refused above.
        root = ET.fromstring(data)  # noqa: S314
    except ET.ParseError as e:
        line = e.position[0] if getattr(e, "position", None) else None
        raise FailureLogError(label, f"not well-formed XML: {e.msg}", line) from e
    if root.tag not in ("testsuites", "testsuite"):
        raise FailureLogError(label, f"not JUnit XML (the root is <{root.tag}>)", 1)
    out = set()
    for case in root.iter("testcase"):
        if not any(child.tag in ("failure", "error") for child in case):
            continue
        nodeid = junit_nodeid(case.get("classname", ""), case.get("name", ""), case.get("file"))
        if nodeid is not None and _looks_like_nodeid(nodeid):
            out.add(nodeid)
    return frozenset(out)


def read_failure_log(path: Path) -> frozenset[str]:
    """Read a failure log: JUnit XML when it starts with ``<``, else pytest's text output.

    Returns the failed and errored node ids. Raises ``InputError`` (``FailureLogError``)
    naming the file when it is missing, unreadable, not UTF-8 or not well-formed JUnit XML.
    """
    label = str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError as e:
        raise FailureLogError(label, "no such file") from e
    except OSError as e:
        raise FailureLogError(label, f"cannot read: {e.strerror}") from e
    text = decode_utf8(data, label, FailureLogError)
    if text.lstrip("\ufeff \t\r\n").startswith("<"):
        return parse_junit(data, label)
    return parse_text(text)
