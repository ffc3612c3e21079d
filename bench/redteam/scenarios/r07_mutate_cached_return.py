NAME = "r07_mutate_cached_return"
# The changed function drops a defensive copy of an lru_cached value and mutates it through a
# local name. The memo is on ANOTHER function (defaults), so the changed one (enable_debug)
# is judged alone, and the mutation is rooted at a local name.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/settings.py": """from functools import lru_cache


@lru_cache(maxsize=None)
def defaults():
    return {"debug": False, "level": "info"}


def enable_debug():
    cfg = dict(defaults())
    cfg["debug"] = True
    return cfg
""",
    "tests/test_a_debug.py": """from pkg.settings import enable_debug


def test_enable_debug():
    assert enable_debug()["debug"] is True
""",
    "tests/test_b_defaults.py": """from pkg.settings import defaults


def test_debug_off_by_default():
    assert defaults()["debug"] is False
""",
}
PATCH = {
    "src/pkg/settings.py": BASE["src/pkg/settings.py"].replace(
        "cfg = dict(defaults())", "cfg = defaults()"
    ),
}
