"""Every option of every command explains itself, and no help text sends the reader to a
file the installed package does not ship (``docs/`` and the README are not in the wheel)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import patchlane
from patchlane import main as cli

PACKAGE = Path(patchlane.__file__).resolve().parent
# Files patchlane itself writes: naming them tells the user what they get, not where to read.
WRITTEN = frozenset({"review.md", "triage.md"})
DOC_FILE = re.compile(r"[\w./-]*\.(?:md|rst|html?)\b", re.IGNORECASE)
DOC_WORDS = re.compile(
    r"\bdocs?/|\b(?:README|CHANGELOG|CONTRIBUTING|DESIGN|decisions|architecture)\b"
)
IN_PACKAGE = re.compile(r"\bpatchlane/([\w./-]*\w)")


def _walk(
    parser: argparse.ArgumentParser, path: str
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{path} {name}")


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every parser and sub-parser, each command's built as ``main`` builds it (its module
    imported and its ``register`` called)."""
    found: list[tuple[str, argparse.ArgumentParser]] = []
    for name in cli.COMMANDS:
        full = cli._lazy_parser([name])
        for path, parser in _walk(full, "patchlane"):
            if path == f"patchlane {name}" or path.startswith(f"patchlane {name} "):
                found.append((path, parser))
    found.append(("patchlane", cli._lazy_parser([])))
    return found


def _texts(parser: argparse.ArgumentParser) -> Iterator[str]:
    yield parser.description or ""
    yield parser.epilog or ""
    for action in parser._actions:
        yield action.help or ""
        if isinstance(action, argparse._SubParsersAction):
            yield from (choice.help or "" for choice in action._choices_actions)


PARSERS = _parsers()


def test_every_command_and_action_is_audited() -> None:
    paths = {path for path, _ in PARSERS}
    assert {f"patchlane {name}" for name in cli.COMMANDS} <= paths
    # The actions of the commands that have them are walked too.
    assert {"patchlane replay select", "patchlane fixture lock", "patchlane freeze audit"} <= paths


@pytest.mark.parametrize(("path", "parser"), PARSERS, ids=[path for path, _ in PARSERS])
def test_every_option_has_help(path: str, parser: argparse.ArgumentParser) -> None:
    missing = [
        "/".join(action.option_strings) or action.dest
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction)
        and (not (action.help or "").strip() or action.help == argparse.SUPPRESS)
    ]
    assert missing == [], f"{path}: options without help: {missing}"
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            bare = [c.dest for c in action._choices_actions if not (c.help or "").strip()]
            assert bare == [], f"{path}: actions without help: {bare}"


@pytest.mark.parametrize(("path", "parser"), PARSERS, ids=[path for path, _ in PARSERS])
def test_no_help_text_cites_a_file_the_package_does_not_ship(
    path: str, parser: argparse.ArgumentParser
) -> None:
    for text in _texts(parser):
        cited = [m for m in DOC_FILE.findall(text) if m not in WRITTEN]
        assert cited == [], f"{path}: cites {cited}: {text!r}"
        assert DOC_WORDS.search(text) is None, f"{path}: points at the docs: {text!r}"
        for rel in IN_PACKAGE.findall(text):
            assert (PACKAGE / rel).exists(), f"{path}: patchlane/{rel} is not in the package"


def test_the_audit_catches_a_citation_and_a_missing_help() -> None:
    """The checks above fail on the two faults they exist for."""
    parser = argparse.ArgumentParser(description="rules 1-6 (docs/architecture.md §4)")
    parser.add_argument("--slice", metavar="FILE")
    texts = list(_texts(parser))
    assert any(DOC_WORDS.search(t) for t in texts)
    assert any(DOC_FILE.findall(t) for t in texts)
    assert [a.dest for a in parser._actions if not a.help] == ["slice"]
    assert (PACKAGE / "schemas").is_dir() and not (PACKAGE / "docs").exists()
