NAME = "r17_copyreg"
# copyreg's dispatch table is stdlib state: the changed function registers a reducer with
# copyreg.pickle (not a listed mutating name); every later pickle of that class uses it.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/point.py": """import copyreg
import pickle


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def _flat(p):
    return Point, (p.x, 0)


def snapshot(p):
    data = pickle.dumps((p.x, p.y))
    return data
""",
    "tests/test_a_snapshot.py": """import pickle

from pkg.point import Point, snapshot


def test_snapshot_roundtrip():
    assert pickle.loads(snapshot(Point(1, 2)))[0] == 1
""",
    "tests/test_b_pickle.py": """import pickle

from pkg.point import Point


def test_point_pickles():
    p = pickle.loads(pickle.dumps(Point(3, 4)))
    assert (p.x, p.y) == (3, 4)
""",
}
PATCH = {
    "src/pkg/point.py": BASE["src/pkg/point.py"].replace(
        "    data = pickle.dumps((p.x, p.y))\n",
        "    copyreg.pickle(Point, _flat)\n    data = pickle.dumps((p.x, p.y))\n",
    ),
}
