NAME = "c06_hypothesis_branch"
# A function reached by a Hypothesis test only for some examples; here at the base the
# recording's examples never reached it (it is in the same file the test runs).
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/parse.py": """def classify(n):
    if n == 123456789:
        return special(n)
    return "plain"


def special(n):
    return "special"
""",
    "tests/test_prop.py": """from hypothesis import given, strategies as st

from pkg.parse import classify


@given(st.integers())
def test_classify_returns_text(n):
    assert isinstance(classify(n), str)
""",
}
PATCH = {
    "src/pkg/parse.py": BASE["src/pkg/parse.py"].replace('    return "special"', "    return None")
}
