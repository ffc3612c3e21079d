"""The documentation's own promises: the generated reference pages are current, every
relative link points at a file (and heading) that exists, no snippet pins a ref the
repository does not have, and the tutorial's commands run as printed."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.gitrepo import FIXED_ENV

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [ROOT / name for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md", "bench/README.md")]
    + list((ROOT / "docs").rglob("*.md"))
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs/gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_reference_pages_are_current() -> None:
    stale = [
        rel
        for rel, render in _generator().PAGES.items()
        if (ROOT / rel).read_text(encoding="utf-8") != render()
    ]
    assert stale == [], f"{', '.join(stale)} out of date: run python3 docs/gen_reference.py"


def _anchors(page: Path) -> set[str]:
    """The GitHub-style anchors of ``page``'s headings (outside code blocks)."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in PAGES:
        text = FENCE.sub("", page.read_text(encoding="utf-8"))
        for target in LINK.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)}: {target}"
            if not resolved.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{where} (no such heading)")
    assert broken == []


def test_cited_repository_files_exist() -> None:
    """A ``src/patchlane/``, ``bench/`` or ``.ci/`` path quoted in the docs, and a ``docs/``
    page the package cites, is a file of this repository (``NAME`` and globs are
    placeholders; the demo's ``docs/`` is the example project's)."""
    cited = [
        (page, path)
        for page in PAGES
        for path in re.findall(
            r"`((?:src/patchlane|bench|\.ci)/[^`\s:]*)`", page.read_text(encoding="utf-8")
        )
    ]
    demo = ROOT / "src" / "patchlane" / "demo"
    package = [
        p for p in sorted((ROOT / "src" / "patchlane").rglob("*.py")) if demo not in p.parents
    ]
    cited += [
        (source, path)
        for source in package
        for path in re.findall(r"\bdocs/[\w./-]*\w\.md", source.read_text(encoding="utf-8"))
    ]
    missing = [
        f"{where.relative_to(ROOT)}: {path}"
        for where, path in cited
        if not re.search(r"[*{]|\b[A-Z]{3,}\b", path) and not (ROOT / path).exists()
    ]
    assert missing == []


def test_snippets_pin_only_refs_that_exist() -> None:
    """``uses: OWNER/patchlane@REF`` and pre-commit's ``rev: REF`` name a branch that is
    documented as moving (``main``), a full commit id, or a tag this repository has."""
    proc = subprocess.run(["git", "tag"], cwd=ROOT, capture_output=True, text=True, check=True)
    tags = set(proc.stdout.split())
    refs = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        refs += [(page, r) for r in re.findall(r"uses: [\w.-]+/patchlane@([\w./-]+)", text)]
        refs += [(page, r) for r in re.findall(r"^\s*rev: ([\w./-]+)", text, re.MULTILINE)]
    assert refs, "the action and pre-commit snippets are gone"
    bad = [
        f"{page.relative_to(ROOT)}: {ref}"
        for page, ref in refs
        if ref != "main" and ref not in tags and not re.fullmatch(r"[0-9a-f]{40}", ref)
    ]
    assert bad == []


TUTORIAL = ROOT / "docs" / "tutorial" / "first-gate.md"
# A fenced block: its info string ("sh", or nothing for output) and its body.
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# A command's expected exit code, as its trailing comment states it ("# reject: exit 1").
STATED_EXIT = re.compile(r"#[^'\"]*\bexit (\d+)\s*$")


def _commands(block: str) -> list[tuple[str, int]]:
    """Split a shell block into its commands (a here-document and backslash continuations
    belong to the line that opens them), each with the exit code its comment states (0
    when it states none)."""
    lines, commands = block.splitlines(), []
    while lines:
        command = [lines.pop(0)]
        if not command[0].strip():
            continue
        while command[-1].endswith("\\") and lines:
            command.append(lines.pop(0))
        stated = STATED_EXIT.search(command[-1])
        heredoc = re.search(r"<<-?\s*'?(\w+)'?", command[0])
        while heredoc and lines and command[-1] != heredoc.group(1):
            command.append(lines.pop(0))
        commands.append(("\n".join(command), int(stated.group(1)) if stated else 0))
    return commands


@pytest.mark.slow
def test_the_tutorial_runs_as_printed(tmp_path: Path) -> None:
    """Every shell block of docs/tutorial/first-gate.md, in order, in one ``sh`` started in an
    empty directory (``patchlane`` a function calling this interpreter), with a fresh cache
    and patchlane's own defaults (no test-suite overrides): each command exits as the page
    states, and every line of the output the page shows after a block is printed."""
    commands: list[tuple[str, int]] = []
    shown: list[str] = []
    for kind, body in BLOCK.findall(TUTORIAL.read_text(encoding="utf-8")):
        if kind == "sh":
            commands += _commands(body)
        elif not kind:
            shown += [line for line in body.splitlines() if line.strip()]
    assert len(commands) > 10 and any(code == 1 for _, code in commands), "tutorial gone?"
    status = tmp_path / "status"
    script = ['patchlane() { "$PYTHON" -m patchlane "$@"; }']
    for number, (command, code) in enumerate(commands):
        script += [
            command,
            f'rc=$?; echo "{number} $rc" >> "$STATUS"; [ "$rc" -eq {code} ] || exit 100',
        ]
    (tmp_path / "tutorial.sh").write_text("\n".join(script) + "\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PATCHLANE_"))}
    env.update(FIXED_ENV)
    env.update(
        PYTHON=sys.executable,
        STATUS=os.fspath(status),
        PATCHLANE_CACHE_DIR=os.fspath(tmp_path / "cache"),
        PATCHLANE_KEY_DIR=os.fspath(tmp_path / "key"),
        NO_COLOR="1",
    )
    proc = subprocess.run(
        ["sh", os.fspath(tmp_path / "tutorial.sh")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    ran = status.read_text(encoding="utf-8").splitlines() if status.exists() else []
    failed = commands[len(ran) - 1][0] if proc.returncode == 100 else ""
    assert proc.returncode == 0 and len(ran) == len(commands), (
        f"stopped at {failed!r} ({ran[-1:]}): {proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    missing = [line for line in shown if line not in proc.stdout]
    assert missing == [], proc.stdout


def test_the_tree_section_names_every_module_and_folder() -> None:
    """docs/architecture.md §6 is the map of the tree: a module or folder it does not name
    (in backticks, outside the diagram) is one a newcomer cannot place."""
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = re.sub(r"```.*?```", "", doc[doc.index("## 6. The tree and its rules") :], flags=re.S)
    named = {
        word
        for quoted in re.findall(r"`([^`]+)`", section)
        for word in re.split(r"[/ .,:()]+", quoted)
        if word
    }
    src = ROOT / "src" / "patchlane"
    places = [
        p
        for p in sorted(src.rglob("*"))
        if "__pycache__" not in p.parts
        and "example" not in p.relative_to(src).parts
        and ((p.suffix == ".py" and p.name != "__init__.py") or p.is_dir())
    ]
    unnamed = [str(p.relative_to(src)) for p in places if p.stem not in named]
    assert unnamed == []
