NAME = "c09_decorator_wrapper"
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/deco.py": """import functools


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*a, **k):
        return fn(*a, **k)
    return wrapper


@logged
def double(x):
    return 2 * x
""",
    "tests/test_a.py": "from pkg.deco import logged\n\n\ndef test_wraps_name():\n    assert logged(len).__name__ == 'len'\n",
    "tests/test_b.py": "from pkg.deco import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
}
PATCH = {
    "src/pkg/deco.py": BASE["src/pkg/deco.py"].replace(
        "        return fn(*a, **k)", "        return fn(*a, **k) + 1"
    )
}
