NAME = "s24e_pty"
# A CLI tested in a pseudo-terminal (pty.fork -> os.forkpty): the audit event os.forkpty is
# not among the recorder's process events, and the exec happens in the child, so the test
# is not blind; the map says no test ran main() and decides cli.py for it.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/cli.py": """import sys


def parse_args(argv):
    return {"name": argv[0] if argv else "world"}


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    print(f"hello {args['name']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
""",
    "tests/test_cli_parse.py": """from pkg.cli import parse_args


def test_default_name():
    assert parse_args([]) == {"name": "world"}
""",
    "tests/test_cli_tty.py": """import os
import pty
import sys


def test_cli_in_a_terminal():
    pid, fd = pty.fork()
    if pid == 0:
        env = {**os.environ, "PYTHONPATH": "src"}
        os.execve(sys.executable, [sys.executable, "-m", "pkg.cli", "ann"], env)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 1024)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    assert b"hello ann" in out
""",
}
PATCH = {
    "src/pkg/cli.py": BASE["src/pkg/cli.py"]
    .replace("    print(f\"hello {args['name']}\")\n", "    print(f\"Hello, {args['name']}!\")\n")
    .replace(
        '    return {"name": argv[0] if argv else "world"}\n',
        '    name = argv[0] if argv else "world"\n    return {"name": name}\n',
    ),
}
