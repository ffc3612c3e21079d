NAME = "s13_exec_py"
# A .py file read and exec'd (not imported) at import time: coverage never sees its lines
# (compiled as "<string>"), its open was at import time, and the map says no test ran it.
BASE = {
    "src/pkg/__init__.py": """from pathlib import Path

_ns = {}
exec((Path(__file__).parent / "defaults.py").read_text(), _ns)
defaults = _ns["defaults"]


def greeting(name):
    return f"{defaults()['greeting']}, {name}"
""",
    "src/pkg/defaults.py": """def defaults():
    return {"greeting": "Hello"}
""",
    "src/pkg/util.py": """def add(a, b):
    return a + b
""",
    "tests/test_greeting.py": """from pkg import greeting


def test_greeting():
    assert greeting("Ann") == "Hello, Ann"
""",
    "tests/test_util.py": """from pkg.util import add


def test_add():
    assert add(2, 3) == 5
""",
}
PATCH = {
    "src/pkg/defaults.py": """def defaults():
    return {"greeting": "Hi"}
""",
    "src/pkg/util.py": "def add(a, b):\n    return b + a\n",
}
