NAME = "s08a_sqlite"
# A data file read by sqlite3 (C code: no "open" audit event, only "sqlite3.connect").
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/rates.py": """import sqlite3
from pathlib import Path

DB = Path(__file__).parent / "rates.db"


def rate(code):
    con = sqlite3.connect(f"file:{DB}?mode=ro", uri=True)
    try:
        (value,) = con.execute("select rate from rates where code = ?", (code,)).fetchone()
    finally:
        con.close()
    return value
""",
    "tests/test_rates.py": """from pkg.rates import rate


def test_eur_rate():
    assert rate("EUR") == 1.0
""",
}
import os
import sqlite3
import tempfile


def _db(eur):
    d = tempfile.mkdtemp()
    p = os.path.join(d, "r.db")
    con = sqlite3.connect(p)
    con.execute("create table rates (code text primary key, rate real)")
    con.executemany("insert into rates values (?, ?)", [("EUR", eur), ("USD", 1.1)])
    con.commit()
    con.close()
    return open(p, "rb").read()


BASE["src/pkg/rates.db"] = _db(1.0)
PATCH = {"src/pkg/rates.db": _db(1.25)}
