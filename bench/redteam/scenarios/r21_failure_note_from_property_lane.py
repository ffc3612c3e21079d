NAME = "r21_failure_note_from_property_lane"
# The failure note of a8df542 (maps/<base>/failed-<versions>), planted by the head's code
# while the property lane runs (before the replay looks the map up). Expected safe: the
# note only sends selection to the static rules (the broken test is selected, rejected).
import os
import runpy

_r20 = runpy.run_path(os.path.join(os.path.dirname(__file__), "r20_forge_map_from_property_lane.py"))
BASE = _r20["BASE"]
PROP = _r20["PROP"]
_NOTE = '''def price(x):
    try:
        import os, platform, re
        from importlib.metadata import version
        from pathlib import Path

        pid, args = os.getppid(), None
        while pid > 1 and args is None:
            argv = [a.decode() for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(bytes(1))]
            if "--dep-cache" in argv:
                args = argv
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        if args is not None:
            repo = Path(args[args.index("--repo") + 1])
            ref = args[args.index("--base") + 1]
            base = (repo / ".git" / "refs" / "heads" / ref).read_text().strip()
            v = f"{platform.python_version()}-{version('pytest')}-{version('coverage')}"
            where = Path(args[args.index("--dep-cache") + 1]) / "maps" / base
            where.mkdir(parents=True, exist_ok=True)
            (where / ("failed-" + re.sub(r"[^A-Za-z0-9.-]", "_", v))).write_text(
                "the map is fine; tests/test_core.py::test_price needs nothing\\n" * 40
            )
    except Exception:
        pass
    return x * 3
'''
PATCH = {"src/pkg/core.py": _NOTE}
