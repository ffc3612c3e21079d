NAME = "s11_nested_insert"
# difflib places an insertion after the last line of a nested function; the base side of
# the insertion is taken to be inside the INNER function, though at the head the new lines
# are in the OUTER function's body: tests that call the outer one only are not selected.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/handlers.py": """def make_handler(cfg):
    def handler(x):
        return x * cfg.get("factor", 2)
    return handler
""",
    "tests/test_a_handler.py": """from pkg.handlers import make_handler


def test_handler_doubles():
    assert make_handler({})(3) == 6
""",
    "tests/test_b_make.py": """from pkg.handlers import make_handler


def test_zero_factor_is_accepted():
    assert callable(make_handler({"factor": 0}))
""",
}
PATCH = {
    "src/pkg/handlers.py": """def make_handler(cfg):
    def handler(x):
        return x * cfg.get("factor", 2)
    if cfg.get("factor", 2) <= 0:
        raise ValueError("factor must be positive")
    return handler
""",
}
