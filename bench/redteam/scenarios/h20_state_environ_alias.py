NAME = "h20_state_environ_alias"
CLASS = "3 state"
# State left behind through an alias: the patch changes pkg.levels.parse and adds a test
# that sets PKG_LEVEL through a local name for os.environ (`e = os.environ`) and never
# restores it. tests/test_b_default.py (base, unchanged, never runs parse) then sees
# "debug". RED: the patch's own plain `python -m pytest` at the head fails
# (test_b_default.py::test_default_level). The broken test lies outside the narrowed slice.
# The canary is turned off in this review map (`canary: off`), so the outcome does not hang
# on the canary's draw (about 1 run in 4 would include test_b_default).
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
    "src/pkg/config.py": """import os


def level():
    return os.environ.get("PKG_LEVEL", "info")
""",
    "src/pkg/levels.py": """_ORDER = ("debug", "info", "warning", "error")


def parse(name):
    return _ORDER.index(name)
""",
    "tests/test_levels.py": """from pkg.levels import parse


def test_parse_order():
    assert parse("info") < parse("error")
""",
    "tests/test_b_default.py": """from pkg.config import level


def test_default_level():
    assert level() == "info"
""",
}
PATCH = {
    "src/pkg/levels.py": """_ORDER = ("debug", "info", "warning", "error")


def parse(name):
    name = name.strip().lower()
    return _ORDER.index(name)
""",
    "tests/test_a_levels.py": """import os

from pkg.levels import parse


def test_parse_from_environment():
    e = os.environ
    e["PKG_LEVEL"] = " DEBUG "
    assert parse(e["PKG_LEVEL"]) == 0
""",
}
