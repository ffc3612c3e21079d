NAME = "s10_getsource_linecache"
# inspect.getsource reads a file through linecache: only the first test that asks for a
# module's source opens it; later ones get the cached lines (no audit event).
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/rules.py": """def rule_small(x):
    return x < 10


def rule_large(x):
    return x > 100
""",
    "src/pkg/explain.py": '''import inspect


def explain(rule):
    """The rule's condition, as written."""
    source = inspect.getsource(rule)
    return source.strip().splitlines()[-1].replace("return ", "").strip()
''',
    "tests/test_a_explain.py": """from pkg.explain import explain
from pkg.rules import rule_small


def test_explain_small():
    assert explain(rule_small) == "x < 10"
""",
    "tests/test_b_explain.py": """from pkg.explain import explain
from pkg.rules import rule_large


def test_explain_large():
    assert explain(rule_large) == "x > 100"
""",
}
PATCH = {
    "src/pkg/rules.py": BASE["src/pkg/rules.py"].replace("x > 100", "x >= 100"),
}
