NAME = "r26_instance_memo"
# A hand-rolled memo on an instance made at import, in the same module: only get() reads
# ``self._table`` (modstate: "a memo only its own method reads is that method's business"),
# but the changed function is _build(), which get() runs only on the first call: every later
# caller depends on it without running it.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/units.py": """def _build():
    return {"km": 1000, "m": 1, "cm": 0.01}


class Table:
    def __init__(self):
        self._table = None

    def get(self, unit):
        if self._table is None:
            self._table = _build()
        return self._table[unit]


TABLE = Table()


def to_metres(value, unit):
    return value * TABLE.get(unit)
""",
    "tests/test_a_km.py": """from pkg.units import TABLE


def test_km():
    assert TABLE.get("km") == 1000
""",
    "tests/test_b_cm.py": """from pkg.units import to_metres


def test_cm():
    assert to_metres(250, "cm") == 2.5
""",
}
PATCH = {
    "src/pkg/units.py": BASE["src/pkg/units.py"].replace('"cm": 0.01}', '"cm": 0.1}'),
}
