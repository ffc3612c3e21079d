NAME = "s14_raw_thread"
# Work done on a thread started with _thread.start_new_thread (not threading): coverage
# installs its tracer through threading.settrace only, so those lines are never recorded
# and the map says "no test ran" the worker.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/bg.py": """import _thread


def _worker(xs, out, done):
    out.append(sum(x * x for x in xs))
    done.release()


def sum_of_squares(xs):
    out, done = [], _thread.allocate_lock()
    done.acquire()
    _thread.start_new_thread(_worker, (xs, out, done))
    done.acquire()
    return out[0]
""",
    "src/pkg/util.py": "def add(a, b):\n    return a + b\n",
    "tests/test_bg.py": "from pkg.bg import sum_of_squares\n\n\ndef test_sos():\n    assert sum_of_squares([1, 2, 3]) == 14\n",
    "tests/test_util.py": "from pkg.util import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}
PATCH = {
    "src/pkg/bg.py": BASE["src/pkg/bg.py"].replace(
        "sum(x * x for x in xs)", "sum(x * 2 for x in xs)"
    ),
    "src/pkg/util.py": "def add(a, b):\n    return b + a\n",
}
