NAME = "s24b_cli_main"
# A CLI tested through a subprocess: the test is blind, and the static graph does not see
# the edge; the map says "no test of the base ran" main() and counts that as evidence.
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
    "src/pkg/__main__.py": "from pkg.cli import main\n\nraise SystemExit(main())\n",
    "tests/test_cli_parse.py": """from pkg.cli import parse_args


def test_default_name():
    assert parse_args([]) == {"name": "world"}
""",
    "tests/test_cli_run.py": """import os
import subprocess
import sys


def test_cli_prints_hello():
    env = {**os.environ, "PYTHONPATH": "src"}
    out = subprocess.run(
        [sys.executable, "-m", "pkg", "ann"], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0
    assert out.stdout == "hello ann\\n"
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
