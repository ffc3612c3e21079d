NAME = "s05_settrace"
# A project feature (and its test) that uses sys.settrace and restores "no tracer" turns
# coverage's C tracer off for the rest of the recording: later tests record no lines.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/tracing.py": '''import sys


def record_calls(fn, *args):
    """Return the names of the Python functions fn(*args) calls."""
    calls = []

    def tracer(frame, event, arg):
        if event == "call":
            calls.append(frame.f_code.co_name)
        return None

    sys.settrace(tracer)
    try:
        fn(*args)
    finally:
        sys.settrace(None)
    return calls
''',
    "src/pkg/mathx.py": """def clamp(x, lo, hi):
    return max(lo, min(x, hi))
""",
    "tests/test_a_tracing.py": """from pkg.tracing import record_calls


def helper():
    return 1


def test_record_calls():
    assert "helper" in record_calls(helper)
""",
    "tests/test_b_mathx.py": """from pkg.mathx import clamp


def test_clamp():
    assert clamp(5, 0, 3) == 3
    assert clamp(-1, 0, 3) == 0
""",
}
PATCH = {
    "src/pkg/mathx.py": "def clamp(x, lo, hi):\n    return min(lo, max(x, hi))\n",
    # harmless companion change in the function test A runs
    "src/pkg/tracing.py": BASE["src/pkg/tracing.py"].replace(
        "    calls = []\n", "    calls = list()\n"
    ),
}
