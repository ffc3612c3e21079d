NAME = "h23_collect_sigkill"
CLASS = "4 collection"
# Collection killed: the changed module kills its own process (SIGKILL) when it is imported
# while pytest is loaded (and its function is wrong: clamp's bounds are swapped). RED: the patch's own plain
# `python -m pytest` at the head dies during collection (exit -9) and runs no test; the
# code is wrong for the tests' own inputs.
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
import signal
import sys

if "pytest" in sys.modules:
    os.kill(os.getpid(), signal.SIGKILL)


def clamp(x, lo, hi):
    return min(lo, max(hi, x))
""",
}
