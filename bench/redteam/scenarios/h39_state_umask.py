import os
import runpy

NAME = "h39_state_umask"
CLASS = "3 state"
# State left behind in the process: to_metres's module sets the umask to 0o077 at first
# call ("files we write are private") and never restores it. tests/test_b_fmt.py saves a report
# and checks it is world-readable (0o644). RED: the plain suite fails at the head
# (test_b_fmt.py::test_saved_readable).
KIND = "red"
_T = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_h_state.py"))
BASE = _T["base"](
    """def save(path, x):
    path.write_text(f"{x:.2f}\\n")
""",
    """import stat

from pkg import fmt


def test_saved_readable(tmp_path):
    target = tmp_path / "r.txt"
    fmt.save(target, 1.5)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
""",
)
PATCH = _T["patch"](
    "import os\n",
    "    os.umask(0o077)\n",
)
