NAME = "r24_pytest_tmp_factory"
# State carried through a file in pytest's own session temp directory (tmp_path_factory):
# pytest's fixtures are not "shared" in the map (their value is pytest's state), and files
# outside the tree are not recorded as opened. The changed release() leaves the lock file.
# (With os.remove instead of Path.unlink modstate flags the module: "remove" is a listed
# mutating name rooted at ``os``; an accident of naming.)
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/lock.py": """from pathlib import Path


def acquire(folder):
    path = Path(folder) / "pkg.lock"
    if path.exists():
        raise RuntimeError("locked")
    path.write_text("held")
    return path


def release(path):
    path.unlink()
    return True
""",
    "tests/test_a_lock.py": """from pkg.lock import acquire, release


def test_acquire_release(tmp_path_factory):
    path = acquire(tmp_path_factory.getbasetemp())
    assert release(path)
""",
    "tests/test_b_lock.py": """from pkg.lock import acquire


def test_acquire_again(tmp_path_factory):
    acquire(tmp_path_factory.getbasetemp()).unlink()
""",
}
PATCH = {
    "src/pkg/lock.py": BASE["src/pkg/lock.py"].replace(
        "    path.unlink()\n    return True\n", "    return path.exists()\n"
    ),
}
