"""Colour: verdict words and lane statuses on a terminal only, never with ``NO_COLOR``,
``TERM=dumb``, ``--json`` or a pipe, unless forced (``FORCE_COLOR``, ``--color always``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from patchlane.infra.ui import Output, color_wanted
from tests.gitrepo import GitRepo, run_patchlane

ESC = b"\x1b["
GREEN_PASS = b"\x1b[32mpass\x1b[0m"


def test_paint_colours_decision_words_only() -> None:
    out = Output(color=True)
    assert out.paint("reject") == "\x1b[1;31mreject\x1b[0m"
    assert out.paint("undecided") == "\x1b[1;33mundecided\x1b[0m"
    assert out.paint("accept_for_review") == "\x1b[1;32maccept_for_review\x1b[0m"
    assert out.paint("fail") == "\x1b[31mfail\x1b[0m"
    assert out.paint("error") == "\x1b[31merror\x1b[0m"
    assert out.paint("pass") == "\x1b[32mpass\x1b[0m"
    assert out.paint("not_applicable") == "not_applicable"
    assert Output().paint("reject") == "reject"


class _Tty:
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("mode", "env", "expected"),
    [
        (None, {}, True),
        (None, {"NO_COLOR": "1"}, False),
        (None, {"NO_COLOR": ""}, True),  # only a non-empty NO_COLOR counts
        (None, {"TERM": "dumb"}, False),
        ("never", {}, False),
        ("always", {"NO_COLOR": "1"}, True),  # the command line decides over the environment
        (None, {"FORCE_COLOR": "1", "TERM": "dumb"}, True),
        (None, {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        (None, {"FORCE_COLOR": "0"}, True),  # not forced: a terminal still colours
    ],
)
def test_color_wanted_on_a_terminal(
    mode: str | None, env: dict[str, str], expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert color_wanted(mode, _Tty()) is expected  # type: ignore[arg-type]


@pytest.fixture
def locked(repo: GitRepo) -> GitRepo:
    """A repository with a map and one locked fixture root: ``fixture check`` passes."""
    repo.write("tests/fixtures/data/a.json", "{}\n")
    repo.write("tests/test_x.py", "def test_x():\n    assert True\n")
    repo.commit("project")
    assert run_patchlane("-q", "init", cwd=repo.path).returncode == 0
    return repo


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["TERM"] = "xterm-256color"
    env.update(extra)
    return env


def _on_a_pty(repo: GitRepo, *args: str, **extra: str) -> bytes:
    """Run ``patchlane ARGS`` with stdout on a pseudo-terminal; return what it wrote."""
    main_fd, child_fd = os.openpty()
    env = {k: v for k, v in _env(**extra).items() if not k.startswith("GIT_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "patchlane", *args],
        cwd=repo.path,
        stdout=child_fd,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(child_fd)
    data = b""
    while True:
        try:
            chunk = os.read(main_fd, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        data += chunk
    os.close(main_fd)
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else b""
    return data


@pytest.mark.slow
def test_a_terminal_gets_colour(locked: GitRepo) -> None:
    out = _on_a_pty(locked, "fixture", "check")
    assert out.startswith(b"fixture: " + GREEN_PASS)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("fixture", "check"), {"NO_COLOR": "1"}),
        (("fixture", "check"), {"TERM": "dumb"}),
        (("--color", "never", "fixture", "check"), {}),
        (("--json", "fixture", "check"), {"FORCE_COLOR": "1"}),
    ],
    ids=["NO_COLOR", "TERM=dumb", "--color never", "--json"],
)
def test_a_terminal_without_colour(
    locked: GitRepo, args: tuple[str, ...], env: dict[str, str]
) -> None:
    out = _on_a_pty(locked, *args, **env)
    assert b"pass" in out
    assert ESC not in out


@pytest.mark.slow
def test_a_pipe_gets_colour_only_when_forced(locked: GitRepo) -> None:
    plain = run_patchlane("fixture", "check", cwd=locked.path, env=_env())
    assert plain.returncode == 0 and b"pass" in plain.stdout and ESC not in plain.stdout
    for args, env in (
        (("fixture", "check"), {"FORCE_COLOR": "1"}),
        (("--color", "always", "fixture", "check"), {}),  # the option's value, then the command
        (("fixture", "check", "--color=always"), {}),  # after the command too
    ):
        proc = run_patchlane(*args, cwd=locked.path, env=_env(**env))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(b"fixture: " + GREEN_PASS), proc.stdout
    forced_json = run_patchlane(
        "--json", "fixture", "check", cwd=locked.path, env=_env(FORCE_COLOR="1")
    )
    assert forced_json.returncode == 0 and ESC not in forced_json.stdout


@pytest.mark.slow
def test_progress_and_errors_on_stderr_stay_plain(locked: GitRepo) -> None:
    proc = run_patchlane("--color", "always", "fixture", "lock", cwd=locked.path, env=_env())
    assert proc.returncode == 2  # no --reason: one plain line
    assert ESC not in proc.stderr
