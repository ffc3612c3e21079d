NAME = "s05b_settrace_inproc"
# s05 without a companion change: a test that runs before the tracer is switched off calls
# clamp() too (and still passes at the head), so the map's needs are not empty.
exec(open(__file__.replace("s05b_settrace_inproc", "s05_settrace")).read())
NAME = "s05b_settrace_inproc"
BASE["tests/test_0_clamp.py"] = (
    "from pkg.mathx import clamp\n\n\ndef test_clamp_degenerate():\n    assert clamp(5, 3, 3) == 3\n"
)
del PATCH["src/pkg/tracing.py"]
