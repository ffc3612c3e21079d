NAME = "s04_mp_spawn"
# multiprocessing with the spawn (or forkserver) start method starts its children through
# _posixsubprocess.fork_exec, which raises no audit event: the test is not "blind", the
# worker function's lines never ran in a traced process, so the map says no test ran it.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/work.py": """import multiprocessing as mp


def square(x):
    return x * x


def parallel_squares(xs):
    with mp.get_context("spawn").Pool(2) as pool:
        return pool.map(square, xs)
""",
    "src/pkg/util.py": """def add(a, b):
    return a + b
""",
    "tests/test_work.py": """from pkg.work import parallel_squares


def test_parallel_squares():
    assert parallel_squares([1, 2, 3]) == [1, 4, 9]
""",
    "tests/test_util.py": """from pkg.util import add


def test_add():
    assert add(2, 3) == 5
""",
}
PATCH = {
    "src/pkg/work.py": BASE["src/pkg/work.py"].replace(
        "    return x * x\n", "    return x ** 2 + 1\n"
    ),
    # a harmless companion change, so that the slice is not empty
    "src/pkg/util.py": "def add(a, b):\n    return b + a\n",
}
