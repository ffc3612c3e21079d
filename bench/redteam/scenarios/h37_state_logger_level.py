import os
import runpy

NAME = "h37_state_logger_level"
CLASS = "3 state"
# State left behind in the logging tree: to_metres quiets the "pkg" logger
# (logging.getLogger("pkg").setLevel(logging.WARNING), "too chatty in loops") and never restores
# it; the logger is the same object. tests/test_b_fmt.py checks, with caplog, that fmt logs
# at INFO. RED: the plain suite fails at the head (test_b_fmt.py::test_logs_rounding).
KIND = "red"
_T = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_h_state.py"))
BASE = _T["base"](
    """import logging

log = logging.getLogger("pkg.fmt")


def number(x):
    text = f"{x:.2f}"
    if float(text) != x:
        log.info("rounded %r to %s", x, text)
    return text
""",
    """import logging

from pkg import fmt


def test_logs_rounding(caplog):
    caplog.set_level(logging.INFO)
    assert fmt.number(1.005) == "1.00"
    assert "rounded" in caplog.text
""",
)
PATCH = _T["patch"](
    "import logging\n",
    '    logging.getLogger("pkg").setLevel(logging.WARNING)\n',
)
