"""The text of the review map ``patchlane init`` writes (it loads with ``parse_review_map``).

Every lane the map keeps is one ``init`` found evidence for, and each choice is explained
in a comment beside it: the property lane only with properties that held at the base
(``init_trial``), else the code in ``lanes.replay.paths`` (judged by the base's tests
alone) with its seed in ``lanes.replay.seed``; the fixture lane with its roots; the replay's
test roots where the tests are; prose as ``ignore`` entries, each deletable. No
placeholder path is ever written, not even in a comment (``check`` refuses one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from patchlane.commands.init_layout import DEFAULT_CASES, DEFAULT_SEED
from patchlane.commands.init_prose import Ignore
from patchlane.commands.init_trial import LeftOut

LOCK_NAME = "LOCK.json"
MAX_AGE_DAYS = 14
# A flow list longer than this is written one item a line.
FLOW_WIDTH = 88


@dataclass(frozen=True)
class MapContent:
    """What the map says: the code's paths, the property module kept (``None``: none), the
    ``@given`` tests kept, what was left out, the fixture roots, the registry, the replay's
    test roots and the prose entries."""

    packages: tuple[str, ...]
    module: str | None
    tests: tuple[str, ...]
    left_out: tuple[LeftOut, ...]
    roots: tuple[str, ...]
    registry: str
    test_roots: tuple[str, ...]
    ignores: tuple[Ignore, ...] = ()
    module_name: str = "checks.props"
    module_file: str | None = None

    @property
    def property_lane(self) -> bool:
        """Whether the map has a property lane: something held at the base, and there is
        code for it to cover."""
        return bool(self.packages) and (self.module is not None or bool(self.tests))


def q(text: str) -> str:
    """``text`` as a YAML double-quoted scalar (a JSON string is one, escapes included)."""
    return json.dumps(text)


def flow(items: tuple[str, ...]) -> str:
    """``items`` as a YAML flow list."""
    return "[" + ", ".join(q(i) for i in items) + "]"


def key_list(indent: str, key: str, items: tuple[str, ...], comment: str = "") -> list[str]:
    """``KEY: [...]`` on one line when it fits (``comment`` after it), else one item a line."""
    line = f"{indent}{key}: {flow(items)}"
    if len(line) <= FLOW_WIDTH:
        return [line + (f"  # {comment}" if comment else "")]
    head = f"{indent}{key}:" + (f"  # {comment}" if comment else "")
    return [head, *(f"{indent}  - {q(i)}" for i in items)]


def render(c: MapContent) -> str:
    """Return the text of the map for ``c``."""
    lines = [
        "# review-map.yml, scaffolded by patchlane init: edit per repository.",
        "# The base branch's copy decides for every patch; a patch that edits this file is",
        "# listed as a control-plane change and still judged by the base's map.",
        "version: 1",
        "lanes:",
    ]
    lines += _property(c) if c.property_lane else _no_property(c)
    lines += _fixture(c.roots)
    lines += [
        "  freeze:",
        f"    registry: {q(c.registry)}",
        f"    max_age_days: {MAX_AGE_DAYS}",
        "  replay:",
        *key_list("    ", "tests", c.test_roots, "where the project's tests are"),
    ]
    if not c.property_lane:
        if c.packages:
            lines += [
                "    # No property oracle covers this code: a patch to it is judged by the",
                "    # base's tests alone (the replay of the tests that reach the change), and",
                "    # the review note says so. Move a path to lanes.property once it has one.",
                *key_list("    ", "paths", c.packages),
            ]
        lines.append(f"    seed: {DEFAULT_SEED}  # default for --seed (the replay's)")
    lines += [
        "    # compiled code (C, Cython, Rust): the command that builds it in place",
        '    # build: "python setup.py build_ext --inplace"',
    ]
    lines += _ignore(c.ignores)
    return "\n".join(lines) + "\n"


def _left_out(indent: str, left: tuple[LeftOut, ...]) -> list[str]:
    if not left:
        return []
    out = [f"{indent}# Left out by init (each did not run or hold at the base):"]
    out += [f"{indent}#   {item.name}: {item.why}" for item in left]
    return out


def _property(c: MapContent) -> list[str]:
    lines = []
    if c.module is not None:
        lines += [
            f"  # Properties live in {c.module_file or c.module}: functions prop_NAME(seed, n)",
            "  # run with a pinned seed and case count against the patched code.",
        ]
    lines += ["  property:", *key_list("    ", "paths", c.packages)]
    if c.module is not None:
        lines.append(f"    module: {q(c.module)}")
    lines += [
        f"    seed: {DEFAULT_SEED}  # default for --seed (the replay's too)",
        f"    cases: {DEFAULT_CASES}  # default for --cases",
    ]
    if c.tests:
        lines += [
            "    # Hypothesis (@given) tests that held at the base, run as properties from",
            "    # the base's version and the head's (their other tests are listed as skipped):",
            *key_list("    ", "tests", c.tests),
        ]
    return lines + _left_out("    ", c.left_out)


def _no_property(c: MapContent) -> list[str]:
    if c.tests and not c.packages:
        why = "no package or module was found for it to cover"
    elif c.left_out:
        why = "no property held at the base"
    else:
        why = "no properties were found"
    lines = [
        f"  # No property lane: {why}.",
        "  # To add properties later, write deterministic functions",
        "  # prop_NAME(seed: int, n: int = 200) in checks/props.py that call the code and",
        "  # assert its contract (or Hypothesis @given tests), then add:",
        "  # property:",
    ]
    if c.packages:
        lines += [f"  #   paths: {flow(c.packages)}"]
    else:
        lines += ["  #   paths: []  # your code's folders"]
    lines += [f"  #   module: {q(c.module_name)}", f"  #   cases: {DEFAULT_CASES}"]
    if c.tests:
        lines.append(f"  #   tests: {flow(c.tests)}")
    lines += ["  # and take its paths out of lanes.replay.paths."]
    return lines + _left_out("  ", c.left_out)


def _fixture(roots: tuple[str, ...]) -> list[str]:
    if len(roots) == 1:
        return ["  fixture:", f"    paths: {flow(roots)}", f"    lock: {q(roots[0] + LOCK_NAME)}"]
    if roots:
        lines = ["  fixture:", "    roots:"]
        for root in roots:
            lines += [f"      - path: {q(root)}", f"        lock: {q(root + LOCK_NAME)}"]
        return lines
    return [
        "  # fixture lane left out: no fixture directory was found. For one (a folder of",
        "  # golden files), add a fixture lane with its paths and lock, and run:",
        '  # patchlane fixture lock --reason "initial lock"',
    ]


def _ignore(entries: tuple[Ignore, ...]) -> list[str]:
    if not entries:
        return [
            "# Paths no lane needs, each with a one-line reason; an unmapped change is undecided:",
            "# ignore:",
            '#   - path: "docs/"',
            '#     reason: "prose only"',
        ]
    lines = [
        "# Prose init found: no lane needs it. Delete an entry to have changes there reviewed",
        "# as unmapped (undecided); a file the project's pytest collects stays a test.",
        "ignore:",
    ]
    for entry in entries:
        lines += [f"  - path: {q(entry.path)}", f"    reason: {q(entry.reason)}"]
    return lines
