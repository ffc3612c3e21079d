"""The import watch (``child.importstate``) in a real Python process: each case writes modules
to a temporary package, installs the watch for one of them, imports it for real and reads the
records the watch sent. What a changed module's import changes outside it is named; an import
that changes only the module itself is ``ok`` with nothing; a look that cannot be trusted has
another status.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import patchlane

pytestmark = pytest.mark.slow  # a Python process per case

SRC = str(Path(patchlane.__file__).resolve().parents[1])
OTHER = "REGISTRY = {}\nNAMES = []\nLIMIT = 10\n\n\nclass Config:\n    level = 1\n"
DRIVER = """\
import json, os, sys
sys.path.insert(0, sys.argv[1])
import pkg.other
from patchlane.child.importstate import ImportWatch
records = []
before = sys.argv[3] == "before"
if before:
    import pkg.changed
changed = os.path.join(sys.argv[1], "pkg", "changed.py")
ImportWatch([sys.argv[2]], records.append, (), [changed]).install()
try:
    __import__(sys.argv[2])
    if sys.argv[3] == "twice":
        del sys.modules[sys.argv[2]]
        __import__(sys.argv[2])
    if sys.argv[3] == "exec":
        with open(changed) as f:
            exec(compile(f.read(), changed, "exec"), {"__name__": "again"})
except Exception as e:
    records.append({"raised": type(e).__name__})
print(json.dumps(records))
"""


def watched(tmp_path: Path, changed: str, mode: str = "once") -> list[dict[str, object]]:
    """Write ``pkg/other.py`` and ``pkg/changed.py`` (``changed``) under ``tmp_path``, import
    ``pkg.changed`` under the watch in a new process; return the records it sent."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "other.py").write_text(OTHER)
    (pkg / "changed.py").write_text(changed)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": SRC, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, str(driver), str(tmp_path), "pkg.changed", mode],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    records: list[dict[str, object]] = json.loads(done.stdout.splitlines()[-1])
    return records


def one(tmp_path: Path, changed: str) -> dict[str, object]:
    records = watched(tmp_path, changed)
    assert len(records) == 1, records
    assert records[0]["import_state"] == "pkg.changed"
    return records[0]


def test_a_call_of_the_modules_own_class_changes_nothing_outside(tmp_path: Path) -> None:
    """The boltons ``statsutils`` shape: ``mode = _StatsProperty('mode', _calc_mode)`` in a
    class body, a call of the module's own class, plus a regex compiled and a stdlib import."""
    record = one(
        tmp_path,
        "import re\nimport textwrap\nfrom pkg import other\n\n\nclass _Prop:\n"
        "    def __init__(self, name, func):\n        self.name, self.func = name, func\n\n\n"
        "def _calc(data):\n    return max(data)\n\n\nclass Stats:\n"
        "    mode = _Prop('mode', _calc)\n    pattern = re.compile('[a-z]+x')\n\n\n"
        "Stats.extra = 3\nLIMIT = other.LIMIT + 1\n",
    )
    assert record == {"import_state": "pkg.changed", "status": "ok", "changes": []}


@pytest.mark.parametrize(
    ("code", "named"),
    [
        pytest.param(
            "from pkg import other\nother.REGISTRY['k'] = len\n", "pkg.other", id="registry"
        ),
        pytest.param("from pkg import other\nother.NAMES.append('x')\n", "pkg.other", id="list"),
        pytest.param("import pkg.other\npkg.other.LIMIT = 3\n", "pkg.other.LIMIT", id="rebind"),
        pytest.param("from pkg import other\ndel other.LIMIT\n", "pkg.other.LIMIT", id="delete"),
        pytest.param("from pkg import other\nother.Config.level = 2\n", "pkg.other", id="class"),
        pytest.param("import os\nos.environ['PL_SEEN'] = '1'\n", "os.environ", id="environ"),
        pytest.param("import os\nos.chdir('/')\n", "cwd", id="cwd"),
        pytest.param("import sys\nsys.path.append('/nowhere')\n", "sys", id="sys.path"),
        pytest.param("import random\nrandom.seed(3)\n", "random state", id="random"),
        pytest.param(
            "import warnings\nwarnings.simplefilter('ignore')\n", "_warnings", id="warnings"
        ),
        pytest.param(
            "import signal\nsignal.signal(signal.SIGUSR1, lambda *a: None)\n",
            "signal handlers",
            id="signal",
        ),
        pytest.param(
            "import threading, time\nthreading.Thread(target=time.sleep, args=(5,),"
            " daemon=True).start()\n",
            "threads",
            id="thread",
        ),
        pytest.param(
            "import decimal\ndecimal.getcontext().prec = 5\n", "decimal context", id="decimal"
        ),
        pytest.param(
            "import sys\nsys.modules['pkg.fake'] = object()\n",
            "sys.modules[pkg.fake]",
            id="modules",
        ),
        pytest.param(
            "from pkg import other\n\n\ndef _setup(registry):\n    registry['k'] = len\n\n\n"
            "_setup(other.REGISTRY)\n",
            "pkg.other",
            id="helper",
        ),
        pytest.param(
            "import importlib\n\n\ndef _setup():\n"
            "    vars(importlib.import_module('pkg.other'))['LIMIT'] = 0\n\n\n_setup()\n",
            "pkg.other.LIMIT",
            id="helper-vars",
        ),
        pytest.param(
            "import tempfile, os\nwith open(os.path.join(tempfile.gettempdir(), "
            "'pl-importstate-%d' % os.getpid()), 'w') as f:\n    f.write('x')\n",
            "audit event open",
            id="file-write",
        ),
        pytest.param(
            "import sys\nf = sys._getframe(0)\n", "audit event sys._getframe", id="frames"
        ),
        pytest.param(
            "import collections.abc\nfrom pkg import other\n"
            "collections.abc.Mapping.register(other.Config)\n",
            "abc registrations",
            id="abc-register",
        ),
        pytest.param("import gc\ngc.disable()\n", "gc", id="gc"),
        pytest.param(
            "import sys\nsys.meta_path[0].watch.emit = print\n",
            "the import watch itself",
            id="the-watch",
        ),
    ],
)
def test_a_change_outside_the_module_is_named(tmp_path: Path, code: str, named: str) -> None:
    record = one(tmp_path, code)
    assert record["status"] == "ok"
    changes = record["changes"]
    assert isinstance(changes, list)
    assert any(str(c).startswith(named) for c in changes), changes


def test_a_module_imported_before_the_watch_is_not_trusted(tmp_path: Path) -> None:
    records = watched(tmp_path, "X = 1\n", "before")
    assert [r["status"] for r in records] == ["imported before the watch started"]


def test_a_module_imported_twice_says_so(tmp_path: Path) -> None:
    records = watched(tmp_path, "X = 1\n", "twice")
    assert [r["status"] for r in records] == ["ok", "imported more than once"]


def test_a_run_of_the_modules_code_outside_the_watch_says_so(tmp_path: Path) -> None:
    """A test tool's own loader, or ``exec`` of the file: the watch did not wrap it."""
    records = watched(tmp_path, "X = 1\n", "exec")
    assert [r["status"] for r in records] == ["ok", "a watched module's code ran outside the watch"]


def test_a_failed_import_says_so(tmp_path: Path) -> None:
    records = watched(tmp_path, "from pkg import other\nother.LIMIT = 0\nraise ValueError\n")
    assert records == [
        {"import_state": "pkg.changed", "status": "its import failed", "changes": []},
        {"raised": "ValueError"},
    ]
