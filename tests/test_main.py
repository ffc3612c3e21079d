"""The command line and its single error boundary: exit codes, one-line errors, lean start-up."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import patchlane
import patchlane.project.classify
from patchlane.infra.ui import one_line, show
from patchlane.main import COMMANDS, main
from tests.gitrepo import GitRepo, make_project, run_patchlane, start_patch, stderr_lines


def _console_script() -> str:
    # Where pip put this interpreter's scripts, never a search of PATH.
    script = Path(sysconfig.get_path("scripts")) / "patchlane"
    assert script.is_file(), f"the patchlane console script is not installed: {script}"
    return os.fspath(script)


def _project(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write("src/billing/core.py", "patched\n")
    repo.commit("patch")


def _single_error(proc: subprocess.CompletedProcess[bytes], code: int = 2) -> str:
    assert proc.returncode == code, proc.stderr
    lines = stderr_lines(proc)
    assert len(lines) == 1, lines
    assert "Traceback" not in proc.stderr.decode()
    return lines[0]


# --- start-up ------------------------------------------------------------------------------


def test_help_through_the_console_script() -> None:
    proc = subprocess.run([_console_script(), "--help"], capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert out.startswith("usage: patchlane")
    for name in COMMANDS:
        assert name in out
    assert "exit codes" in out


def test_help_through_python_dash_m() -> None:
    proc = run_patchlane("--help")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert out.startswith("usage: patchlane")
    assert "--repo DIR" in out and "--map FILE" in out and "--json" in out


def test_help_imports_no_yaml_no_rfc8785_no_command_or_lane_module() -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "patchlane", "--help"],
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0
    imported = {
        m.group(1)
        for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)", proc.stderr.decode(), re.M)
    }
    assert "patchlane.main" in imported  # the measurement itself works
    heavy = {
        name
        for name in imported
        if name == "yaml"
        or name.startswith(("yaml.", "_yaml", "rfc8785", "patchlane.commands", "patchlane.lanes"))
    }
    assert heavy == set()


def test_help_leaves_heavy_modules_unloaded() -> None:
    # The same question asked of sys.modules, which sees every way of importing.
    code = (
        "import sys\n"
        "from patchlane.main import main\n"
        "assert main(['--help']) == 0\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stdout.decode().splitlines()
    assert "patchlane.main" in loaded
    assert [
        m
        for m in loaded
        if m.split(".")[0] in ("yaml", "_yaml", "rfc8785")
        or m.startswith(("patchlane.commands", "patchlane.lanes"))
    ] == []


def test_command_help_imports_only_that_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "patchlane", "classify", "--help"],
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "--base REF" in proc.stdout.decode()
    stderr = proc.stderr.decode()
    assert "patchlane.commands.classify" in stderr
    assert not re.search(r"\| +(yaml|rfc8785|patchlane\.lanes)", stderr)


def test_version() -> None:
    proc = run_patchlane("--version")
    assert proc.returncode == 0
    assert proc.stdout.decode().strip() == f"patchlane {patchlane.__version__}"


# --- bad usage -----------------------------------------------------------------------------


def test_no_command_prints_help_and_exits_2() -> None:
    proc = run_patchlane()
    assert proc.returncode == 2
    assert proc.stdout.decode().startswith("usage: patchlane")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["triage"], "the following arguments are required: CANDIDATE"),
        (["classify", "--base", "main", "--bogus"], "unrecognized arguments: --bogus"),
        (["classify", "--base"], "expected one argument"),
        (["--repo"], "expected one argument"),
        (["frob\nnicate"], "invalid choice"),
        (["gate", "--base", "main", "--seed", "4294967296"], "must be from 0 to 4294967295"),
        (["property", "--seed", "-1"], "must be from 0 to 4294967295"),
        (["replay", "run", "--slice", "s", "--seed", "x"], "--seed: not an integer: 'x'"),
    ],
)
def test_usage_errors_exit_2_on_one_line(args: list[str], words: str) -> None:
    line = _single_error(run_patchlane(*args))
    assert line.startswith("patchlane")
    assert words in line


@pytest.mark.slow
def test_repo_that_is_not_a_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    line = _single_error(run_patchlane("--repo", plain, "classify", "--base", "main"))
    assert "not inside a git repository" in line
    line = _single_error(run_patchlane("--repo", tmp_path / "missing", "classify", "--base", "x"))
    assert "not a directory" in line


@pytest.mark.slow
def test_cwd_outside_any_repository(tmp_path: Path) -> None:
    line = _single_error(run_patchlane("classify", "--base", "main", cwd=tmp_path))
    assert "not inside a git repository (use --repo DIR)" in line


def test_patchlane_error_is_one_line_even_with_a_newline_in_it(repo: GitRepo) -> None:
    _project(repo)
    line = _single_error(run_patchlane("--repo", repo.path, "classify", "--base", "no\nsuch\nref"))
    assert line.startswith("patchlane: error: unknown ref")
    assert "no\\nsuch\\nref" in line


# --- internal errors -----------------------------------------------------------------------


def _broken_classify(*args: object, **kwargs: object) -> object:
    raise ZeroDivisionError("boom\nsecond line")


def test_internal_error_exits_4_with_one_line(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo)
    monkeypatch.setattr(patchlane.project.classify, "classify", _broken_classify)
    code = main(["--repo", os.fspath(repo.path), "classify", "--base", "main"])
    assert code == 4
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, lines
    assert "internal error (a bug in patchlane" in lines[0]
    assert "ZeroDivisionError: boom\\nsecond line" in lines[0]
    assert "run with -v for the traceback" in lines[0]
    assert "Traceback" not in err


def test_internal_error_with_verbose_adds_the_traceback(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo)
    monkeypatch.setattr(patchlane.project.classify, "classify", _broken_classify)
    code = main(["--repo", os.fspath(repo.path), "classify", "--base", "main", "-v"])
    assert code == 4
    err = capsys.readouterr().err
    assert err.splitlines()[0].startswith("patchlane: internal error (a bug in patchlane")
    assert "Traceback (most recent call last)" in err
    assert "_broken_classify" in err


@pytest.mark.slow
def test_unwritable_output_is_bad_input_not_a_bug(repo: GitRepo, tmp_path: Path) -> None:
    _project(repo)
    blocker = tmp_path / "regular-file"
    blocker.write_text("")
    for out in (blocker / "classify.json", tmp_path):
        proc = run_patchlane("--repo", repo.path, "classify", "--base", "main", "--out", out, "-v")
        line = _single_error(proc) if proc.returncode == 2 else proc.stderr.decode()
        assert proc.returncode == 2, line
        assert "cannot write" in stderr_lines(proc)[0]


# --- global options before and after the command -------------------------------------------


@pytest.mark.slow
def test_global_options_before_or_after_the_command(repo: GitRepo, tmp_path: Path) -> None:
    _project(repo)
    repo.write("tools/x.py", "pass\n")
    repo.commit("unmapped too")
    outside = tmp_path / "map.yml"
    outside.write_text(
        (repo.path / "review-map.yml").read_text() + '  - path: "tools/"\n    reason: "scripts"\n'
    )
    r, m = os.fspath(repo.path), os.fspath(outside)
    before = run_patchlane("--repo", r, "--map", m, "--json", "classify", "--base", "main")
    after = run_patchlane("classify", "--base", "main", "--json", "--map", m, "--repo", r)
    mixed = run_patchlane("--json", "--repo", r, "classify", "--map", m, "--base", "main")
    assert before.returncode == after.returncode == mixed.returncode == 0, before.stderr
    assert before.stdout == after.stdout == mixed.stdout
    assert b'"source": "file"' in before.stdout

    # each flag on its own, after the command, still counts
    assert run_patchlane("classify", "--base", "main", "--repo", r).stdout.startswith(b"map: ")
    quiet = run_patchlane("classify", "--base", "main", "--repo", r, "-q")
    assert quiet.returncode == 3
    assert quiet.stdout == b""
    quiet_before = run_patchlane("-q", "--repo", r, "classify", "--base", "main")
    assert quiet_before.stdout == b""
    json_before = run_patchlane("--json", "--repo", r, "classify", "--base", "main")
    assert json_before.stdout.startswith(b"{\n")


def test_in_process_main_json_output(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    _project(repo)
    code = main(["classify", "--repo", os.fspath(repo.path), "--base", "main", "--json"])
    assert code == 0
    out = capsys.readouterr().out
    assert out.startswith("{\n") and out.endswith("}\n")


# --- terminal output helpers (ui) ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("src/billing/core.py", "src/billing/core.py"),
        ("café/日本.txt", "café/日本.txt"),
        ("x\nfixture: pass", "'x\\nfixture: pass'"),
        (os.fsdecode(b"caf\xe9.txt"), "'caf\\udce9.txt'"),
        ("tab\there", "'tab\\there'"),
        ("\x1b[2Jclear", "'\\x1b[2Jclear'"),
        ("rtl\u202eoverride", "'rtl\\u202eoverride'"),
    ],
)
def test_show_quotes_paths_that_could_forge_a_line(text: str, shown: str) -> None:
    assert show(text) == shown


def test_one_line_escapes_only_what_breaks_a_line() -> None:
    assert one_line("plain é text") == "plain é text"
    assert one_line("a\nb\r\tc\x00" + os.fsdecode(b"\xff")) == "a\\nb\\r\\tc\\x00\\udcff"


def test_say_survives_a_strict_utf8_stdout() -> None:
    code = (
        "import os\n"
        "from patchlane.infra.ui import Output\n"
        "Output().say('map: ' + os.fsdecode(b'caf\\xe9.yml'))\n"
        "Output(quiet=True).say('hidden')\n"
        "Output(json=True).say('hidden too')\n"
    )
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"map: caf\\udce9.yml\n"


def test_write_stdout_writes_the_bytes_jsonio_writes(tmp_path: Path) -> None:
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from patchlane.inputs.jsonio import dumps_report, write_json\n"
        "from patchlane.infra.ui import write_stdout\n"
        "data = {'path': os.fsdecode(b'caf\\xe9.txt'), 'n': 'é'}\n"
        "print('first', flush=False)\n"
        "write_stdout(dumps_report(data))\n"
        "write_json(Path(sys.argv[1]), data)\n"
    )
    target = tmp_path / "out.json"
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    proc = subprocess.run(
        [sys.executable, "-c", code, os.fspath(target)], capture_output=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"first\n" + target.read_bytes()
