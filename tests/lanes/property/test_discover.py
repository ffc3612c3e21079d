"""Static discovery: which ``prop_*`` a module version defines and which file an import
would load, without importing anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchlane.lanes.property.discover import (
    find_module_file,
    overlapping_prefixes,
    property_names,
    read_version,
    search_roots,
)
from patchlane.project.config import PropertyLane
from tests.lanes.property.project import write_dir


def lane(paths: tuple[str, ...] = ("src/shop/",), pythonpath: tuple[str, ...] = ()) -> PropertyLane:
    return PropertyLane(paths, ("checks.props",), 1, 10, 5.0, pythonpath)


def test_top_level_defs_assignments_and_guarded_blocks_are_properties() -> None:
    source = """\
import sys
from patchlane.props import check

def prop_a(seed, n=200): ...
async def prop_b(): ...
prop_c = check(lambda rng: {})(lambda: None)
prop_d: object = None
if sys.version_info >= (3, 11):
    def prop_e(seed, n=200): ...
else:
    def prop_f(seed, n=200): ...
try:
    def prop_g(seed, n=200): ...
except ImportError:
    def prop_h(seed, n=200): ...
def prop_a(seed, n=200): ...  # redefined: one property
def helper(): ...
class Props:
    def prop_not_top_level(self): ...
def outer():
    def prop_nested(): ...
"""
    assert property_names(source, "p.py") == (
        "prop_a", "prop_b", "prop_c", "prop_d", "prop_e", "prop_f", "prop_g", "prop_h",
    )  # fmt: skip


def test_a_syntax_error_is_reported_with_its_line(tmp_path: Path) -> None:
    with pytest.raises(SyntaxError):
        property_names("def prop_x(:\n", "p.py")
    file = tmp_path / "p.py"
    file.write_text("x = 1\ndef prop_x(:\n")
    version = read_version("p", "head", file, "checks/p.py")
    assert version.names == () and version.error is not None
    assert version.error.startswith("checks/p.py:2: ")


def test_read_version_notices_hypothesis(tmp_path: Path) -> None:
    file = tmp_path / "p.py"
    file.write_text("from hypothesis import given\n")
    assert read_version("p", "head", file, "p.py").uses_hypothesis
    file.write_text("import random\n")
    assert not read_version("p", "head", file, "p.py").uses_hypothesis


def test_find_module_file_follows_pythons_search_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write_dir(a, {"pkg/__init__.py": "", "pkg/mod.py": "", "single.py": ""})
    write_dir(b, {"pkg/__init__.py": "", "pkg/mod.py": "", "pkg/only_b.py": "", "ns/sub.py": ""})
    assert find_module_file("pkg.mod", (a, b)) == a / "pkg" / "mod.py"
    # A regular package is searched alone: b's submodule is invisible through a's package.
    assert find_module_file("pkg.only_b", (a, b)) is None
    assert find_module_file("single", (a, b)) == a / "single.py"
    assert find_module_file("pkg", (a, b)) == a / "pkg" / "__init__.py"
    assert find_module_file("ns.sub", (a, b)) == b / "ns" / "sub.py"
    assert find_module_file("ns", (a, b)) is None  # a namespace package has no file
    assert find_module_file("missing.mod", (a, b)) is None


def test_a_later_regular_package_beats_an_earlier_namespace_portion(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write_dir(a, {"checks/props.py": ""})
    write_dir(b, {"checks/__init__.py": "", "checks/props.py": ""})
    assert find_module_file("checks.props", (a, b)) == b / "checks" / "props.py"
    # A package beats a module of the same name in the same directory.
    write_dir(a, {"checks.py": "", "checks/__init__.py": ""})
    assert find_module_file("checks", (a,)) == a / "checks" / "__init__.py"


def test_search_roots_are_root_src_and_pythonpath_when_present(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "lib").mkdir()
    found = search_roots(tmp_path, lane(pythonpath=("lib", "absent/")))
    assert found == (tmp_path, tmp_path / "src", tmp_path / "lib")
    assert search_roots(tmp_path / "lib", lane()) == (tmp_path / "lib",)


def test_property_packages_that_hold_code_under_test_are_found() -> None:
    shop = lane(paths=("src/shop/",))
    assert overlapping_prefixes(shop, ("shop/", "src/shop/")) == ["src/shop/"]
    assert overlapping_prefixes(shop, ("checks/", "src/checks/")) == []
    everything = lane(paths=("src/",))
    assert overlapping_prefixes(everything, ("src/checks/",)) == ["src/checks/"]
    assert overlapping_prefixes(lane(paths=("src/shop",)), ("src/shop_v2/",)) == []
