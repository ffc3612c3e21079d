NAME = "s07_lazy_import"
# A module imported lazily (inside test functions): its import-time code, which calls the
# changed function, runs in the context of the first test that imports it only.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/tables.py": """def build_table():
    return {n: n * n for n in range(10)}
""",
    "src/pkg/heavy.py": """from pkg.tables import build_table

TABLE = build_table()
""",
    "tests/test_a_heavy.py": """def test_table_size():
    from pkg import heavy

    assert len(heavy.TABLE) == 10
""",
    "tests/test_b_heavy.py": """def test_table_value():
    from pkg import heavy

    assert heavy.TABLE[3] == 9
""",
}
PATCH = {
    "src/pkg/tables.py": """def build_table():
    return {n: n ** 3 for n in range(10)}
""",
}
