NAME = "r22_line_shift"
# A body change that adds a line moves every later function of the file down: a test that
# sees a line number (a log record's lineno, a warning's, a traceback) of an UNCHANGED
# function below it fails, without running the changed function or opening the source.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/api.py": """import logging

log = logging.getLogger("pkg.api")


def total(items):
    return sum(items)


def old_total(items):
    log.warning("old_total is deprecated")
    return sum(items, 0)
""",
    "tests/test_a_total.py": """from pkg.api import total


def test_total():
    assert total([1, 2]) == 3
""",
    "tests/test_b_where.py": """import logging

from pkg.api import log, old_total


def test_deprecation_points_at_api():
    seen = []
    handler = logging.Handler()
    handler.emit = lambda r: seen.append(f"{r.module}:{r.lineno}")
    log.addHandler(handler)
    try:
        old_total([1])
    finally:
        log.removeHandler(handler)
    assert seen == ["api:11"]
""",
}
PATCH = {
    "src/pkg/api.py": BASE["src/pkg/api.py"].replace(
        "    return sum(items)\n", "    items = list(items)\n    return sum(items)\n"
    ),
}
