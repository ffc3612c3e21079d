"""The project's own promises: README's set-up commands and CI run the same thing."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```(?:sh|bash|console)?\n(.+?)\n```", text, flags=re.DOTALL)


def test_readme_starts_with_the_two_setup_commands() -> None:
    first, second = readme_commands()[:2]
    assert first.strip() == "python3 -m pip install . && python3 -m patchlane demo"
    assert second.strip() == "python3 -m pip install -e '.[test]' && python3 -m pytest -n auto"


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line for line in ci if line and not line.startswith(("#", "set ", "cd "))]
    # The sandbox's install where CI can (it runs as root), the README's test command
    # (the fast tier), exactly; then the slow tier, and the pytest 8 run of the replay's
    # tests, which the README's development section names too.
    assert commands == [
        "bash .ci/bubblewrap",
        readme_commands()[1].strip(),
        "python3 -m pytest -n auto -m slow",
        "bash .ci/pytest8",
    ]
    assert (ROOT / ".ci" / "pytest8").is_file()
    assert "bash .ci/pytest8" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_test_path_the_pytest_8_run_names_exists() -> None:
    # pytest stops with "no tests ran" when one named path is gone (a test module moved or
    # renamed), so the pytest 8 run would test nothing of the replay.
    script = (ROOT / ".ci" / "pytest8").read_text(encoding="utf-8")
    paths = re.findall(r"(?<![\w/.-])(tests/[\w/.-]+)", script)
    assert len(paths) > 10
    assert [p for p in paths if not (ROOT / p).exists()] == []
