NAME = "r13_module_fixture_teardown"
# A module-scoped fixture's teardown (charged to the fixture's own context, so to its users
# in test_a_server.py) calls server.stop(), which tells ANOTHER module (pkg.ports, through
# its own function) to keep the port reserved. A test in another file, which never used the
# fixture nor ran stop(), then finds the port taken.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/ports.py": """_TAKEN = set()


def claim(port):
    if port in _TAKEN:
        raise RuntimeError(f"port {port} in use")
    _TAKEN.add(port)


def release(port):
    _TAKEN.discard(port)


def hold(port):
    _TAKEN.add(port)
""",
    "src/pkg/server.py": """from pkg import ports


class Server:
    def __init__(self, port):
        self.port = port
        ports.claim(port)


def stop(server):
    ports.release(server.port)
    return server.port
""",
    "tests/test_a_server.py": """import pytest

from pkg.server import Server, stop


@pytest.fixture(scope="module")
def server():
    s = Server(8080)
    yield s
    stop(s)


def test_server_port(server):
    assert server.port == 8080
""",
    "tests/test_b_claim.py": """from pkg import ports, server  # noqa: F401


def test_claim_8080():
    ports.claim(8080)
    ports.release(8080)
""",
}
PATCH = {
    "src/pkg/server.py": BASE["src/pkg/server.py"].replace(
        "    ports.release(server.port)\n", "    ports.hold(server.port)\n"
    ),
}
