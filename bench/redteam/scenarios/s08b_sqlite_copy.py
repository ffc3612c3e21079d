NAME = "s08b_sqlite_copy"
# As s08a, plus a schema test that copies the database (shutil.copy opens it): the map
# selects only that test; the test that reads through sqlite3.connect is missed.
exec(open(__file__.replace("s08b_sqlite_copy", "s08a_sqlite")).read())
NAME = "s08b_sqlite_copy"
BASE["tests/test_schema.py"] = """import shutil
import sqlite3

from pkg.rates import DB


def test_schema(tmp_path):
    copy = tmp_path / "r.db"
    shutil.copy(DB, copy)
    con = sqlite3.connect(copy)
    cols = [r[1] for r in con.execute("pragma table_info(rates)")]
    con.close()
    assert cols == ["code", "rate"]
"""
