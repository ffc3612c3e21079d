NAME = "h55_state_putenv"
CLASS = "3 state"
# State left behind below os.environ: the changed function sets PKG_MODE for worker
# subprocesses with os.putenv, which changes the process's C environment but not os.environ
# (what the watch reads), in a function body (what the static rules skip in code modules).
# tests/test_b_worker.py (base, outside the slice) starts a worker that must see the default.
# RED: the patch's own plain `python -m pytest` at the head fails
# (test_b_worker.py::test_worker_default_mode).
KIND = "red"
REVIEW_MAP = """version: 1
lanes:
  property:
    paths: ["src/pkg/"]
    module: "checks.props"
    seed: 1
  replay:
    tests: ["tests/"]
    canary: off
"""
BASE = {
    "review-map.yml": REVIEW_MAP,
    "src/pkg/__init__.py": "",
    "src/pkg/batch.py": """def chunks(items, size):
    return [items[i : i + size] for i in range(0, len(items), size)]
""",
    "src/pkg/worker.py": """import subprocess
import sys


def worker_mode():
    code = "import os; print(os.environ.get('PKG_MODE', 'safe'))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip()
""",
    "tests/test_a_batch.py": """from pkg.batch import chunks


def test_chunks():
    assert chunks([1, 2, 3], 2) == [[1, 2], [3]]
""",
    "tests/test_b_worker.py": """from pkg.worker import worker_mode


def test_worker_default_mode():
    assert worker_mode() == "safe"
""",
}
PATCH = {
    "src/pkg/batch.py": """import os


def chunks(items, size):
    mode = os
    mode.putenv("PKG_MODE", "fast")  # workers started for big batches skip validation
    return [items[i : i + size] for i in range(0, len(items), size)]
""",
}
