import os
import runpy

NAME = "h35_state_class_attr"
CLASS = "3 state"
# State left behind in place: to_metres sets a class attribute of pkg.fmt's Formatter
# through an instance's type (type(f).places = 3); the module's binding of Formatter is the
# same object. RED: the plain suite fails at the head (test_b_fmt.py::test_two_decimals).
KIND = "red"
_T = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_h_state.py"))
BASE = _T["base"](
    """class Formatter:
    places = 2

    def number(self, x):
        return f"{x:.{self.places}f}"


DEFAULT = Formatter()
""",
    """from pkg.fmt import Formatter


def test_two_decimals():
    assert Formatter().number(1.5) == "1.50"
""",
)
PATCH = _T["patch"](
    "import sys\n",
    '    shown = sys.modules.get("pkg.fmt")\n'
    "    if shown is not None:\n"
    "        type(shown.DEFAULT).places = 3\n",
)
