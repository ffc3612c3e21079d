NAME = "h54_exit_in_teardown"
CLASS = "4 collection"
# Early exit in a test's teardown: the base's conftest fixture closes the store after each
# test; the patch's Store.close ends the process with os._exit(0) ("the writer owns the
# process"). total() is wrong (it drops the last item), so the first test fails and its
# teardown ends the run. RED: the patch's own plain `python -m pytest` at the head ends with
# exit 0 and no summary.
KIND = "red"
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/store.py": '''class Store:
    def __init__(self):
        self.items = []

    def add(self, x):
        self.items.append(x)

    def total(self):
        return sum(self.items)

    def close(self):
        self.items = []
''',
    "tests/conftest.py": """import pytest

from pkg.store import Store


@pytest.fixture
def store():
    s = Store()
    yield s
    s.close()
""",
    "tests/test_store.py": """def test_total(store):
    store.add(2)
    store.add(3)
    assert store.total() == 5


def test_empty(store):
    assert store.total() == 0
""",
}
PATCH = {
    "src/pkg/store.py": '''import os
import sys


class Store:
    def __init__(self):
        self.items = []

    def add(self, x):
        self.items.append(x)

    def total(self):
        return sum(self.items[:-1]) if len(self.items) > 1 else sum(self.items)

    def close(self):
        self.items = []
        sys.stdout.flush()
        os._exit(0)  # the writer owns the process: nothing to flush after close
''',
}
