import os
import runpy

NAME = "h34_state_dict_update"
CLASS = "3 state"
# State left behind in place: to_metres updates pkg.fmt's OPTIONS dict through
# sys.modules ("millimetres need a third decimal"); the dict is the same object, so no binding
# changes. RED: the plain suite fails at the head (test_b_fmt.py::test_two_decimals).
KIND = "red"
_T = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_h_state.py"))
BASE = _T["base"](
    """OPTIONS = {"places": 2}


def number(x):
    return f"{x:.{OPTIONS['places']}f}"
""",
    """from pkg import fmt


def test_two_decimals():
    assert fmt.number(1.5) == "1.50"
""",
)
PATCH = _T["patch"](
    "import sys\n",
    '    shown = sys.modules.get("pkg.fmt")\n'
    "    if shown is not None:\n"
    '        shown.OPTIONS.update(places=3)\n',
)
