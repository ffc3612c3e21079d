"""A small secret scanner for the files a replay slice needs.

A slice that needs a file holding a credential must not go to a shared host. The rules are
deliberately few and well known (they are what leak in practice); a finding reports the
path, the line and the rule, never the matched text, so that the scanner's own output
cannot leak what it found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# (rule, pattern). Patterns are matched per line.
RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("pem-private-key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")),
    # Bounded on both sides: a longer run of capitals is not an access key id.
    ("aws-access-key-id", re.compile(r"(?<![0-9A-Z])AKIA[0-9A-Z]{16}(?![0-9A-Z])")),
    ("github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}")),
    ("slack-token", re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}")),
    (
        "generic-secret",
        re.compile(r"""(?i)(api[_-]?key|secret|password|token)\s*[:=]\s*['"][^'"]{12,}['"]"""),
    ),
)

# Only this much of a file is read: the files a slice needs are source and fixtures, and a
# many-megabyte data file would otherwise make the scan cost more than the slice saves.
MAX_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Finding:
    """One rule matching one line of one file. Holds no secret text."""

    path: str
    line: int
    rule: str

    def why(self) -> str:
        """Return the one-line reason shown to people: ``secret (rule) at line N``."""
        return f"secret ({self.rule}) at line {self.line}"


def scan_text(path: str, text: str) -> list[Finding]:
    """Return every (line, rule) finding in ``text``, at most one per rule and line."""
    found: list[Finding] = []
    for number, line in enumerate(text.splitlines(), start=1):
        for rule, pattern in RULES:
            if pattern.search(line):
                found.append(Finding(path, number, rule))
    return found


def scan_file(root: Path, rel: str) -> list[Finding]:
    """Return the findings in the file ``rel`` below ``root`` (a materialised tree).

    Bytes that are not UTF-8 are replaced, not refused: a key in a mostly binary file is
    still a key. A file that cannot be read gives no finding (it was not materialised,
    e.g. a symlink, so it cannot travel with the tree either).
    """
    try:
        with (root / rel).open("rb") as f:
            data = f.read(MAX_BYTES)
    except OSError:
        return []
    return scan_text(rel, data.decode("utf-8", "replace"))
