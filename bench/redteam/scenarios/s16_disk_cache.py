NAME = "s16_disk_cache"
# A persistent disk cache keyed by the function's bytecode (as joblib.Memory does by its
# source): the cache is warm when the base's map is recorded (the base's suite ran before on
# this machine), so the cached function's body never runs there and the map says no test
# ran it. At the head the key changes, the body runs, and the test fails.
import os
import shutil
import tempfile

_CACHE = os.path.join(tempfile.gettempdir(), "rt-s16-cache")
shutil.rmtree(_CACHE, ignore_errors=True)
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/memo.py": """import hashlib
import json
import os
import tempfile
from pathlib import Path

CACHE = Path(tempfile.gettempdir()) / "rt-s16-cache"


def disk_cached(fn):
    code = fn.__code__
    tag = hashlib.sha256(code.co_code + repr(code.co_consts).encode()).hexdigest()[:16]

    def wrapper(*args):
        CACHE.mkdir(parents=True, exist_ok=True)
        path = CACHE / f"{fn.__name__}-{tag}-{'-'.join(map(str, args))}.json"
        if os.path.exists(path):
            return json.loads(path.read_text())
        value = fn(*args)
        path.write_text(json.dumps(value))
        return value

    return wrapper
""",
    "src/pkg/tables.py": """from pkg.memo import disk_cached


@disk_cached
def squares(n):
    return list(map(pow, range(n), [2] * n))
""",
    "src/pkg/util.py": "def add(a, b):\n    return a + b\n",
    "tests/test_tables.py": "from pkg.tables import squares\n\n\ndef test_squares():\n    assert squares(5)[3] == 9\n",
    "tests/test_util.py": "from pkg.util import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}
PATCH = {
    "src/pkg/tables.py": BASE["src/pkg/tables.py"].replace(
        "list(map(pow, range(n), [2] * n))", "list(map(pow, range(n), [3] * n))"
    ),
    "src/pkg/util.py": "def add(a, b):\n    return b + a\n",
}
