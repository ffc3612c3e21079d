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

# Every character ``str.splitlines`` ends a line at ("\r\n" is one break).
_BREAK_CHARS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_BREAKS = re.compile(f"\r\n|[{_BREAK_CHARS}]")


def _line_local(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """Return ``pattern`` with ``\\s`` and ``[^'"]`` kept from matching a line break, so that
    searching a whole text finds exactly what searching each of its lines finds."""
    source = pattern.pattern.replace("\\s", f"[^\\S{_BREAK_CHARS}]")
    source = source.replace("[^'\"]", f"[^'\"{_BREAK_CHARS}]")
    return re.compile(source, pattern.flags)


# The rules as searched: one pass over the whole text per rule. Matching line by line
# cost a search per line and rule, seconds for a file of empty lines.
_WHOLE_TEXT = tuple((rule, _line_local(pattern)) for rule, pattern in RULES)

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
    """Return every (line, rule) finding in ``text``, at most one per rule and line, in
    line order and then ``RULES`` order; lines are numbered as ``str.splitlines`` splits
    them. Linear in the text (no rule can backtrack across lines). Never raises."""
    hits: set[tuple[int, int]] = set()
    for index, (_, pattern) in enumerate(_WHOLE_TEXT):
        starts = [m.start() for m in pattern.finditer(text)]
        for number in _line_numbers(text, starts):
            hits.add((number, index))
    return [Finding(path, number, RULES[index][0]) for number, index in sorted(hits)]


def _line_numbers(text: str, positions: list[int]) -> list[int]:
    """Return the 1-based line of each of the ascending ``positions`` in ``text``."""
    out: list[int] = []
    line, counted = 1, 0
    for pos in positions:
        line += sum(1 for _ in _BREAKS.finditer(text, counted, pos))
        counted = pos
        out.append(line)
    return out


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
