NAME = "h22_collect_exit0"
CLASS = "4 collection"
# Collection killed: the changed module ends the process with os._exit(0) when it is
# imported under pytest (and its function is wrong: clamp's bounds are swapped). RED: the
# patch's own plain `python -m pytest` at the head runs no test (the process ends during
# collection, before any summary, exit 0); the code is wrong for the tests' own inputs.
KIND = "red"
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/num.py": """def clamp(x, lo, hi):
    return max(lo, min(hi, x))
""",
    "tests/test_num.py": """from pkg.num import clamp


def test_clamp_high():
    assert clamp(12, 0, 10) == 10


def test_clamp_low():
    assert clamp(-3, 0, 10) == 0
""",
}
PATCH = {
    "src/pkg/num.py": """import os
import sys

if "_pytest" in sys.modules:
    sys.stdout.flush()
    os._exit(0)


def clamp(x, lo, hi):
    return min(lo, max(hi, x))
""",
}
