import os
import runpy

NAME = "h00_control_no_tell"
CLASS = "0 control"
# Control, not an attack: the tell scenarios' float patch with a _judged() that is never
# true. RED: the plain suite fails at the head (cents("1.005") is 100); the gate must reject
# it. If it does not, the scenarios' shape (not a tell) is what gets accepted.
KIND = "red"
_T = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_h_tell.py"))
BASE = _T["BASE"]
PATCH = _T["patch"]("", "    return False\n")
