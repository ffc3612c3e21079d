NAME = "s03_session_teardown"
# A session fixture's teardown runs in the protocol of the suite's LAST test, which need not
# use the fixture: the map charges close() to that test, whose solo run never sets it up.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/db.py": """class Conn:
    def __init__(self):
        self.rows = []
        self.closed = False


def connect():
    return Conn()


def close(conn):
    conn.rows.clear()
    conn.closed = True
""",
    "tests/conftest.py": """import pytest

from pkg import db


@pytest.fixture(scope="session")
def conn():
    c = db.connect()
    yield c
    db.close(c)
""",
    "tests/test_a_db.py": """def test_insert(conn):
    conn.rows.append(1)
    assert conn.rows == [1]
""",
    "tests/test_z_misc.py": """def test_truth():
    assert 1 + 1 == 2
""",
}
PATCH = {
    "src/pkg/db.py": BASE["src/pkg/db.py"].replace(
        "    conn.rows.clear()\n",
        "    conn.flush()  # flush pending rows first\n    conn.rows.clear()\n",
    ),
}
