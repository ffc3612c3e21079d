NAME = "r16_process_at_import"
# A process started while the conftest is imported (outside every test and fixture): the
# recorder marks the import context blind, and depmap.from_recording drops that context, so
# no test is blind. The tests that talk to the server ran handle() in the untraced child;
# a unit test ran it in process, so the map says only the unit test needs handle().
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/app.py": """def handle(line):
    return line.upper()
""",
    "src/pkg/server.py": """import sys

from pkg.app import handle


def main():
    for line in sys.stdin:
        sys.stdout.write(handle(line.rstrip("\\\\n")) + "\\\\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
""",
    "tests/conftest.py": """import os
import subprocess
import sys

import pytest

_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
SERVER = subprocess.Popen(
    [sys.executable, "-m", "pkg.server"],
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    env={**os.environ, "PYTHONPATH": _SRC},
)


@pytest.fixture
def server():
    return SERVER


def pytest_unconfigure(config):
    SERVER.stdin.close()
    SERVER.wait(timeout=10)
""",
    "tests/test_unit.py": """from pkg.app import handle


def test_handle_upper():
    assert handle("ab").startswith("AB")
""",
    "tests/test_server.py": """from pkg import app  # noqa: F401 - what the server runs


def test_roundtrip(server):
    server.stdin.write(b"hi\\\\n")
    server.stdin.flush()
    assert server.stdout.readline() == b"HI\\\\n"
""",
}
BASE = {k: v.replace("\\\\", "\\") for k, v in BASE.items()}
PATCH = {
    "src/pkg/app.py": BASE["src/pkg/app.py"].replace(
        "    return line.upper()\n", "    return line.upper() + \"!\"\n"
    ),
}
