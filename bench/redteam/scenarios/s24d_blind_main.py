NAME = "s24d_blind_main"
# A CLI whose code lives in pkg/__main__.py, tested only through a shell wrapper in a
# subprocess: the test is blind (its process start was seen), yet the map says "no test of
# the base ran" the changed main() and counts that as evidence. Static rules alone leave
# __main__.py unreached (undecided).
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/__main__.py": """import sys


def main(argv):
    name = argv[0] if argv else "world"
    print(f"hello {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
""",
    "src/pkg/util.py": """def add(a, b):
    return a + b
""",
    "bin/greet": '#!/bin/sh\nPYTHONPATH=src exec "${PYTHON:-python3}" -m pkg "$@"\n',
    "tests/test_util.py": """from pkg.util import add


def test_add():
    assert add(2, 3) == 5
""",
    "tests/test_greet.py": """import os
import subprocess
import sys


def test_greet_prints_hello():
    env = {**os.environ, "PYTHON": sys.executable}
    out = subprocess.run(["sh", "bin/greet", "ann"], capture_output=True, text=True, env=env)
    assert out.returncode == 0
    assert out.stdout == "hello ann\\n"
""",
}
PATCH = {
    "src/pkg/__main__.py": BASE["src/pkg/__main__.py"].replace(
        'print(f"hello {name}")', 'print(f"Hello, {name}!")'
    ),
    "src/pkg/util.py": "def add(a, b):\n    return b + a\n",
}
