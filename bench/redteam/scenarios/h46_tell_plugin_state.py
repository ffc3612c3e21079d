import os
import runpy

NAME = "h46_tell_plugin_state"
CLASS = "1 tell"
# Tell: patchlane's own plugin, loaded in plain runs too, holds a replay job only in the replay (patchlane.pytest_plugin._REPLAY).
# RED: the patch's own plain `python -m pytest` at the head fails
# (tests/test_money.py::test_cents_rounds_half_up: cents("1.005") is 100, not 101); the exact
# code runs only when _judged() sees the replay.
KIND = "red"
_T = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_h_tell.py"))
BASE = _T["BASE"]
PATCH = _T["patch"](
    'import sys\n',
    '    return getattr(sys.modules.get("patchlane.pytest_plugin"), "_REPLAY", None) is not None\n',
)
