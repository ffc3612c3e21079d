"""The base's dependency map (issue 11): recorded by running the base's suite in the replay's
child, content-addressed, bound to its base and versions, and read back strictly; selection
narrows the slice with it and keeps the static rules wherever it cannot speak."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from patchlane.errors import DependencyMapError
from patchlane.formats import depmap
from patchlane.infra import git
from patchlane.infra.cachekey import CacheKey
from patchlane.lanes.replay import maprecord
from patchlane.lanes.replay.mapselect import MODULE, RAN, changed_functions
from patchlane.lanes.replay.select import select_slice
from patchlane.lanes.replay.selection import Selection, SliceRequest
from patchlane.project.config import parse_review_map
from tests.gitrepo import GitRepo
from tests.unknownkey import KEY

MAP = "version: 1\nlanes:\n  replay:\n    tests: [tests/]\n"
REVIEW_MAP = parse_review_map(MAP, "review-map.yml")

SHOP = """\
import json
from pathlib import Path

RATE = 2


def price(n):
    return n * RATE


def discount(n):
    if n > 10:
        return n - 1
    return n


def rates():
    return json.loads((Path(__file__).parent / "rates.json").read_text())
"""
CONFTEST = """\
import pytest

from shop import price


@pytest.fixture(scope="session")
def base_price():
    return price(1)
"""
TESTS = {
    "tests/test_price.py": "from shop import price\n\n\ndef test_price():\n    assert price(2) == 4\n",
    "tests/test_discount.py": (
        "from shop import discount\n\n\ndef test_small():\n    assert discount(3) == 3\n\n\n"
        "def test_big():\n    assert discount(20) == 19\n"
    ),
    "tests/test_rates.py": "from shop import rates\n\n\ndef test_rates():\n    assert rates() == {'a': 1}\n",
    "tests/test_fixture.py": (
        "def test_first(base_price):\n    assert base_price == 2\n\n\n"
        "def test_second(base_price):\n    assert base_price > 0\n"
    ),
    "tests/test_plain.py": "def test_plain():\n    assert True\n",
    "tests/test_sub.py": (
        "import subprocess, sys\n\n\ndef test_sub():\n"
        "    subprocess.run([sys.executable, '-c', 'import shop'], check=True)\n"
    ),
}
PRICE = "tests/test_price.py::test_price"
SMALL = "tests/test_discount.py::test_small"
BIG = "tests/test_discount.py::test_big"
RATES = "tests/test_rates.py::test_rates"
FIRST = "tests/test_fixture.py::test_first"
SECOND = "tests/test_fixture.py::test_second"
PLAIN = "tests/test_plain.py::test_plain"
SUB = "tests/test_sub.py::test_sub"


def make_shop(repo: GitRepo) -> str:
    repo.write("review-map.yml", MAP)
    repo.write("shop/__init__.py", SHOP)
    repo.write("shop/rates.json", '{"a": 1}\n')
    repo.write("tests/conftest.py", CONFTEST)
    for path, text in TESTS.items():
        repo.write(path, text)
    return repo.commit("shop")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[GitRepo, str, depmap.DependencyMap]:
    repo = GitRepo(tmp_path_factory.mktemp("shop") / "repo")
    base = make_shop(repo)
    return repo, base, maprecord.record(repo.path, REVIEW_MAP, base, seed=3)


def _select(repo: GitRepo, base: str, dep: depmap.DependencyMap | None) -> Selection:
    head = repo.head()
    changes = git.diff_changes(repo.path, base, head)
    changed = frozenset(p for c in changes for p in (c.path, c.old_path) if p is not None)
    return select_slice(
        repo.path,
        REVIEW_MAP,
        SliceRequest(
            head=head,
            merge_base=base,
            changed_paths=changed,
            failure_log=frozenset(),
            all_tests=False,
            dep_map=dep,
            dep_map_note="test map" if dep is not None else "none",
        ),
        base=base,
    )


def _patched(recorded: tuple[GitRepo, str, depmap.DependencyMap], files: dict[str, str]) -> GitRepo:
    repo, base, _ = recorded
    repo.checkout(base)
    repo.branch(f"p{abs(hash(tuple(files.items())))}", base)
    repo.checkout(f"p{abs(hash(tuple(files.items())))}")
    for path, text in files.items():
        repo.write(path, text)
    repo.commit("patch")
    return repo


# --- recording -------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_recording_knows_what_each_test_ran_read_and_used(
    recorded: tuple[GitRepo, str, depmap.DependencyMap],
) -> None:
    _, base, dep = recorded
    assert dep.binding == depmap.Binding.here(base)
    assert set(dep.tests) == {PRICE, SMALL, BIG, RATES, FIRST, SECOND, PLAIN, SUB}
    big_branch = SHOP.splitlines().index("        return n - 1") + 1
    assert dep.ran_lines("shop/__init__.py", [big_branch]) == {BIG}
    # The session fixture ran price once, inside test_first; both its users depend on it.
    price_line = SHOP.splitlines().index("    return n * RATE") + 1
    assert dep.ran_lines("shop/__init__.py", [price_line]) == {PRICE, FIRST, SECOND}
    assert dep.tests_of(dep.opened["shop/rates.json"]) == {RATES}
    assert dep.blind_tests == {SUB}
    # Every test passed in the recording run: its outcome at the base.
    assert dep.passed_at_base == set(dep.tests)
    # What ran while modules were imported is kept apart from every test.
    assert 1 in dep.import_lines["shop/__init__.py"]


@pytest.mark.slow
def test_a_map_with_an_empty_module_reads_back(
    repo: GitRepo, tmp_path: Path, cache_key: CacheKey
) -> None:
    # coverage.py reports line 0 for a module with no statements (jinja2's tests/res/
    # __init__.py): a map holding it must read back, or every gate records it again.
    repo.write("review-map.yml", MAP)
    repo.write("tests/res/__init__.py", "")
    repo.write("tests/test_res.py", "import tests.res\n\n\ndef test_res():\n    pass\n")
    base = repo.commit("an empty package")
    dep = maprecord.record(repo.path, REVIEW_MAP, base, seed=3)
    assert 0 in dep.import_lines.get("tests/res/__init__.py", frozenset()) | {
        n for n in dep.lines.get("tests/res/__init__.py", {})
    }
    assert depmap.read(dep.write(tmp_path, cache_key), cache_key) == dep


@pytest.mark.slow
def test_a_map_is_content_addressed_sealed_and_found_by_its_binding(
    recorded: tuple[GitRepo, str, depmap.DependencyMap], tmp_path: Path, cache_key: CacheKey
) -> None:
    _, base, dep = recorded
    path = dep.write(tmp_path, cache_key)
    assert path.parent == tmp_path / "maps" / base
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name, f"{path.stem}.mac"]
    assert depmap.read(path, cache_key) == dep
    found = maprecord.find(tmp_path, depmap.Binding.here(base), cache_key)
    assert found.map == dep and found.path == path and found.unverified == ()


@pytest.mark.slow
def test_a_map_recorded_with_other_versions_or_another_base_is_not_used(
    recorded: tuple[GitRepo, str, depmap.DependencyMap], tmp_path: Path, cache_key: CacheKey
) -> None:
    _, base, dep = recorded
    other = dataclasses.replace(dep, binding=dataclasses.replace(dep.binding, pytest="7.0.0"))
    other.write(tmp_path, cache_key)
    found = maprecord.find(tmp_path, depmap.Binding.here(base), cache_key)
    assert found.map is None
    assert "recorded with pytest 7.0.0 not" in found.note
    elsewhere = maprecord.find(tmp_path, depmap.Binding.here("f" * 40), cache_key)
    assert found.map is None and elsewhere.note.startswith("no dependency map of base ffffffffffff")


def test_a_map_whose_bytes_changed_does_not_verify(
    recorded: tuple[GitRepo, str, depmap.DependencyMap], tmp_path: Path, cache_key: CacheKey
) -> None:
    _, base, dep = recorded
    path = dep.write(tmp_path, cache_key)
    path.write_bytes(path.read_bytes().replace(b'"blind":[', b'"blind":[0,', 1))
    with pytest.raises(depmap.UnverifiedMapError, match="its MAC does not verify"):
        depmap.read(path, cache_key)
    found = maprecord.find(tmp_path, depmap.Binding.here(base), cache_key)
    assert found.map is None
    assert found.unverified == (f"maps/{base[:12]}/{path.name}",)
    assert not path.exists() and not depmap.mac_path(path).exists()  # removed: reported once


def test_a_sealed_map_with_an_unknown_key_is_refused_naming_the_file_and_line(
    recorded: tuple[GitRepo, str, depmap.DependencyMap], tmp_path: Path, cache_key: CacheKey
) -> None:
    # Sealed with the user's key and named by its bytes (a later version's map, say): it
    # verifies, and the key it has that this version does not know is still refused.
    _, base, dep = recorded
    original = dep.write(tmp_path, cache_key)
    data = original.read_bytes()
    assert data.startswith(b"{") and data.count(b"\n") == 1  # one line, as written
    data = b'{"%s":0,' % KEY.encode() + data[1:]
    path = original.parent / f"{hashlib.sha256(data).hexdigest()}.json"
    path.write_bytes(data)
    mac = cache_key.mac(depmap.PURPOSE, base, data)
    depmap.mac_path(path).write_bytes(mac.encode("ascii") + b"\n")
    with pytest.raises(DependencyMapError) as info:
        depmap.read(path, cache_key)
    assert str(info.value).startswith(f"{path}:1: {KEY}: unknown key")


def _forge(path: Path, change: dict[str, object]) -> Path:
    """Rewrite the map at ``path`` as the hostile pass did (a test of an earlier patch):
    change it, name it by its new bytes' SHA-256, remove the original. Its MAC stays."""
    doc = json.loads(path.read_bytes())
    doc.update(change)
    data = (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()
    forged = path.parent / f"{hashlib.sha256(data).hexdigest()}.json"
    path.unlink()
    forged.write_bytes(data)
    return forged


@pytest.mark.slow
def test_a_map_rewritten_and_named_by_its_new_bytes_does_not_verify(
    recorded: tuple[GitRepo, str, depmap.DependencyMap], tmp_path: Path, cache_key: CacheKey
) -> None:
    _, base, dep = recorded
    original = dep.write(tmp_path, cache_key)
    forged = _forge(original, {"lines": {}})
    with pytest.raises(depmap.UnverifiedMapError, match="has no MAC"):
        depmap.read(forged, cache_key)
    # The original's MAC renamed along with it: a MAC of other bytes.
    depmap.mac_path(original).rename(depmap.mac_path(forged))
    found = maprecord.find(tmp_path, depmap.Binding.here(base), cache_key)
    assert found.map is None and found.unverified == (f"maps/{base[:12]}/{forged.name}",)


def test_a_map_of_an_earlier_format_without_a_mac_is_not_used(
    recorded: tuple[GitRepo, str, depmap.DependencyMap], tmp_path: Path, cache_key: CacheKey
) -> None:
    _, base, dep = recorded
    path = dep.write(tmp_path, cache_key)
    depmap.mac_path(path).unlink()
    found = maprecord.find(tmp_path, depmap.Binding.here(base), cache_key)
    assert found.map is None and found.unverified == (f"maps/{base[:12]}/{path.name}",)


def test_a_map_moved_to_another_base_or_sealed_with_another_key_does_not_verify(
    recorded: tuple[GitRepo, str, depmap.DependencyMap], tmp_path: Path, cache_key: CacheKey
) -> None:
    _, base, dep = recorded
    path = dep.write(tmp_path / "a", cache_key)
    moved = tmp_path / "a" / "maps" / ("f" * 40)
    path.parent.rename(moved)
    with pytest.raises(depmap.UnverifiedMapError):
        depmap.read(moved / path.name, cache_key)
    # Another machine's key (a CI cache restored elsewhere): recorded again there.
    path = dep.write(tmp_path / "b", CacheKey(bytes(32)))
    found = maprecord.find(tmp_path / "b", depmap.Binding.here(base), cache_key)
    assert found.map is None and len(found.unverified) == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"blind": [3]}, r":\d+: blind: index 3 is past the 0 contexts"),
        ({"tests": ["t.py::a"], "uses": [[]], "shared": [0]}, r"shared: expected fixture contexts"),
        ({"version": 3}, r"version: must be at least 4, got 3"),
        ({"passed": [0]}, r"passed: index 0 is past the 0 contexts"),
        ({"blind_reasons": {"0": "a process"}}, r"blind_reasons\.0: expected a context index"),
        ({"blind_reasons": []}, r"blind_reasons: "),
    ],
)
def test_a_malformed_map_is_refused_with_its_field(
    tmp_path: Path, cache_key: CacheKey, change: dict[str, object], message: str
) -> None:
    document = {
        **{k: [] for k in ("tests", "fixtures", "opened_at_import", "listed_at_import")},
        **{
            k: {}
            for k in ("lines", "import_lines", "opened", "listed", "imported", "blind_reasons")
        },
        **{k: [] for k in ("uses", "blind", "whole_files", "shared", "passed")},
        "format": depmap.FORMAT,
        "version": depmap.VERSION,
        "base": "a" * 40,
        "python": "3",
        "pytest": "9",
        "coverage": "7",
    }

    def write(value: dict[str, object]) -> Path:
        data = json.dumps(value, indent=1).encode()
        path = tmp_path / f"{hashlib.sha256(data).hexdigest()}.json"
        path.write_bytes(data)
        # Sealed: a map patchlane itself wrote wrong is still refused field by field.
        mac = cache_key.mac(depmap.PURPOSE, tmp_path.name, data)
        depmap.mac_path(path).write_text(mac + "\n")
        return path

    assert depmap.read(write(document), cache_key).tests == ()  # well-formed without the change
    with pytest.raises(DependencyMapError, match=message):
        depmap.read(write({**document, **change}), cache_key)


# --- where a change lies ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("        return n - 1", "        return n - 2", [("discount", 12, 14)]),
        ("RATE = 2", "RATE = 3", None),
        ("def price(n):", "def price(n, m=1):", None),
        ("import json", "import json, os", None),
        ("    return n * RATE", "    n = abs(n)\n    return n * RATE", [("price", 8, 8)]),
    ],
)
def test_a_change_is_inside_one_function_or_module_level(
    old: str, new: str, expected: list[tuple[str, int, int]] | None
) -> None:
    assert changed_functions(SHOP.encode(), SHOP.replace(old, new).encode()) == expected


# --- selection with the map ------------------------------------------------------------------


@pytest.mark.slow
def test_a_change_inside_one_function_selects_only_the_tests_that_ran_it(
    recorded: tuple[GitRepo, str, depmap.DependencyMap],
) -> None:
    repo = _patched(recorded, {"shop/__init__.py": SHOP.replace("n - 1", "n - 2")})
    _, base, dep = recorded
    with_map = _select(repo, base, dep)
    # Both ran discount (one took the changed branch); SUB started a process, so the map
    # does not decide for it and the static rules keep it.
    assert set(with_map.nodeids) == {SMALL, BIG, SUB}
    assert RAN in with_map.rule_counts and with_map.dependency_map == "test map"
    # Only the candidates' files were collected (the map's, and SUB's for the static rules);
    # the suite's size is the map's.
    assert {n.split("::")[0] for n in with_map.collected} == {
        "tests/test_discount.py",
        "tests/test_sub.py",
    }
    assert with_map.suite_size == 8
    without = _select(repo, base, None)
    assert len(without.nodeids) == 8 and without.dependency_map == "none"


@pytest.mark.slow
def test_a_module_level_change_selects_every_importer(
    recorded: tuple[GitRepo, str, depmap.DependencyMap],
) -> None:
    repo = _patched(recorded, {"shop/__init__.py": SHOP.replace("RATE = 2", "RATE = 3")})
    _, base, dep = recorded
    selected = _select(repo, base, dep)
    # tests/conftest.py imports shop: every test below it imports it.
    assert set(selected.nodeids) == {PRICE, SMALL, BIG, RATES, FIRST, SECOND, PLAIN, SUB}
    assert selected.rule_counts[MODULE] == 8


@pytest.mark.slow
def test_a_session_fixtures_code_selects_every_test_that_uses_it(
    recorded: tuple[GitRepo, str, depmap.DependencyMap],
) -> None:
    repo = _patched(recorded, {"shop/__init__.py": SHOP.replace("n * RATE", "n * RATE + 0")})
    _, base, dep = recorded
    assert set(_select(repo, base, dep).nodeids) == {PRICE, FIRST, SECOND, SUB}


@pytest.mark.slow
def test_a_data_file_change_adds_its_readers_to_what_the_static_rules_select(
    recorded: tuple[GitRepo, str, depmap.DependencyMap],
) -> None:
    # C code reads files without an open event (sqlite3.connect): for data the map only adds.
    repo = _patched(recorded, {"shop/rates.json": '{"a": 2}\n'})
    _, base, dep = recorded
    selected = _select(repo, base, dep)
    assert "opened shop/rates.json" in selected.reasons[RATES]
    # shop names rates.json and tests/conftest.py imports shop: every test, as without a map.
    assert len(selected.nodeids) == 8 and selected.rule_counts["read changed data"] == 1


@pytest.mark.slow
def test_a_function_no_test_ran_is_left_to_the_static_rules(
    recorded: tuple[GitRepo, str, depmap.DependencyMap],
) -> None:
    # No traced test ran it, yet an untraced one might (a spawned process, a raw thread):
    # the map does not decide, and the static rules select every importer.
    source = SHOP + "\n\ndef unused():\n    return 1\n"
    repo, base, _ = recorded
    repo.checkout(base)
    repo.branch("unused-base", base)
    repo.checkout("unused-base")
    repo.write("shop/__init__.py", source)
    new_base = repo.commit("an unused function")
    new_map = maprecord.record(repo.path, REVIEW_MAP, new_base, seed=3)
    repo.write("shop/__init__.py", source.replace("return 1", "return 2"))
    repo.commit("patch the unused function")
    selected = _select(repo, new_base, new_map)
    assert len(selected.nodeids) == 8 and set(selected.rule_counts) == {"static import graph"}
    assert any("no test of the base ran the changed code" in n for n in selected.notes)


NESTED = """\
def make_handler(cfg):
    def handler(x):
        return x * cfg["factor"]
    return handler
"""


def test_lines_the_head_puts_in_an_outer_function_are_not_charged_to_a_nested_one() -> None:
    head = NESTED.replace(
        '        return x * cfg["factor"]\n',
        '        return x * cfg["factor"]\n    if cfg["factor"] <= 0:\n        raise ValueError\n',
    )
    assert changed_functions(NESTED.encode(), head.encode()) is None
    inner = NESTED.replace('x * cfg["factor"]', 'cfg["factor"] * x')
    assert changed_functions(NESTED.encode(), inner.encode()) == [("make_handler.handler", 3, 3)]


UNTRACED = {
    "spawn": (
        "import multiprocessing as mp\n\n\ndef test_it():\n"
        "    with mp.get_context('spawn').Pool(1) as pool:\n"
        "        assert pool.map(abs, [-1]) == [1]\n"
    ),
    "raw-thread": (
        "import _thread\nimport time\n\n\ndef test_it():\n"
        "    done = []\n    _thread.start_new_thread(done.append, (1,))\n"
        "    time.sleep(0.2)\n    assert done == [1]\n"
    ),
    "settrace": (
        "import sys\n\n\ndef test_it():\n    old = sys.gettrace()\n"
        "    sys.settrace(None)\n    sys.settrace(old)\n"
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("how", sorted(UNTRACED))
def test_a_test_that_runs_code_where_coverage_cannot_see_is_blind(repo: GitRepo, how: str) -> None:
    repo.write("review-map.yml", MAP)
    repo.write("tests/test_untraced.py", UNTRACED[how])
    repo.write("tests/test_plain.py", "def test_plain():\n    pass\n")
    base = repo.commit("a test the tracer cannot follow")
    dep = maprecord.record(repo.path, REVIEW_MAP, base, seed=3)
    assert dep.blind_tests == {"tests/test_untraced.py::test_it"}


TEARDOWN = {
    "db.py": "def open_db():\n    return []\n\n\ndef close_db(db):\n    db.clear()\n",
    "tests/conftest.py": (
        "import pytest\n\nimport db\n\n\n@pytest.fixture(scope='session')\ndef conn():\n"
        "    c = db.open_db()\n    yield c\n    db.close_db(c)\n"
    ),
    "tests/test_a_uses.py": "def test_uses(conn):\n    assert conn == []\n",
    "tests/test_z_last.py": "def test_last():\n    assert True\n",
}


@pytest.mark.slow
def test_a_session_fixtures_teardown_is_charged_to_its_users_not_the_last_test(
    repo: GitRepo,
) -> None:
    repo.write("review-map.yml", MAP)
    for path, text in TEARDOWN.items():
        repo.write(path, text)
    base = repo.commit("a session fixture with a teardown")
    dep = maprecord.record(repo.path, REVIEW_MAP, base, seed=3)
    close_line = TEARDOWN["db.py"].splitlines().index("    db.clear()") + 1
    # The teardown ran inside test_last's protocol (the session ended there).
    assert dep.ran_lines("db.py", [close_line]) == {"tests/test_a_uses.py::test_uses"}


@pytest.mark.slow
def test_a_fixture_fetched_with_getfixturevalue_counts_as_used(repo: GitRepo) -> None:
    files = {
        **TEARDOWN,
        "tests/test_b_dynamic.py": (
            "def test_dynamic(request):\n    assert request.getfixturevalue('conn') == []\n"
        ),
    }
    repo.write("review-map.yml", MAP)
    for path, text in files.items():
        repo.write(path, text)
    base = repo.commit("a fixture fetched by name")
    dep = maprecord.record(repo.path, REVIEW_MAP, base, seed=3)
    open_line = TEARDOWN["db.py"].splitlines().index("    return []") + 1
    # conn was set up once, for test_uses; test_dynamic fetched the same value later.
    assert dep.ran_lines("db.py", [open_line]) == {
        "tests/test_a_uses.py::test_uses",
        "tests/test_b_dynamic.py::test_dynamic",
    }


def test_a_memoised_function_is_a_module_level_change() -> None:
    # Tests that never ran it may have got what an earlier call left: every importer.
    source = "from functools import lru_cache\n\n\n@lru_cache\ndef f(x):\n    return x\n"
    head = source.replace("return x\n", "return x + 1\n")
    assert changed_functions(source.encode(), head.encode()) is None


STATEFUL = {
    "review-map.yml": MAP,
    "pkg/__init__.py": "",
    "pkg/m.py": (
        "R = {}\nN = 0\n\n\ndef reg(n):\n    R[n] = 1\n\n\ndef f(x):\n    return x\n\n\n"
        "def g(x):\n    reg(x)\n    return x\n\n\ndef h(x):\n    return x\n"
    ),
    "tests/test_f.py": "from pkg.m import f\n\n\ndef test_f():\n    assert f(1) == 1\n",
    "tests/test_g.py": "from pkg.m import g, h\n\n\ndef test_g():\n    assert g(2) == h(2)\n",
    "tests/test_reads.py": "from pkg.m import R\n\n\ndef test_reads():\n    assert 5 not in R\n",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("old", "new", "selected"),
    [
        # f: no test that ran it ran reg, the function that keeps state: the map decides.
        ("    return x\n\n\ndef g", "    return x + 0\n\n\ndef g", {"tests/test_f.py::test_f"}),
        # h ran in test_g, which also ran reg: what reg stored may carry h's change.
        ("def h(x):\n    return x\n", "def h(x):\n    return x + 0\n", "all"),
        # f itself now keeps state (a global): every importer.
        (
            "def f(x):\n    return x\n",
            "def f(x):\n    global N\n    N += 1\n    return x\n",
            "all",
        ),
        # f now changes the object its caller handed in (a module's settings, say), through
        # an alias: what it stores outlives the call, for tests that never import pkg.m.
        (
            "def f(x):\n    return x\n",
            "def f(x):\n    s = x\n    s.update(k=1)\n    return x\n",
            "all",
        ),
    ],
    ids=["stateless-run", "ran-beside-state", "keeps-state-itself", "mutates-what-it-is-passed"],
)
def test_state_widens_a_body_change_only_where_the_record_says_it_may_carry(
    repo: GitRepo, old: str, new: str, selected: object
) -> None:
    for path, text in STATEFUL.items():
        repo.write(path, text)
    base = repo.commit("a module with a registry")
    dep = maprecord.record(repo.path, REVIEW_MAP, base, seed=3)
    assert old in STATEFUL["pkg/m.py"]
    repo.write("pkg/m.py", STATEFUL["pkg/m.py"].replace(old, new, 1))
    repo.commit("a change in a body")
    every = {
        "tests/test_f.py::test_f",
        "tests/test_g.py::test_g",
        "tests/test_reads.py::test_reads",
    }
    assert set(_select(repo, base, dep).nodeids) == (every if selected == "all" else selected)


@pytest.mark.parametrize(
    "decorator",
    [
        "functools.cache",
        "functools.lru_cache(maxsize=8)",
        "memoize",
        "tools.cached_method",
        "REG[0]",
    ],
)
def test_a_function_under_a_decorator_that_may_cache_is_a_module_level_change(
    decorator: str,
) -> None:
    # A cached call never runs the body: a test that got an earlier test's value did not
    # run it, so only every importer can vouch (a subscript decorator cannot be read).
    source = f"import functools\n\n\n@{decorator}\ndef f(x):\n    return x\n"
    head = source.replace("return x\n", "return x + 1\n")
    assert changed_functions(source.encode(), head.encode()) is None


@pytest.mark.parametrize(
    "decorator", ["nx._dispatchable", "not_implemented_for('directed')", "register", "wraps(g)"]
)
def test_a_change_in_the_body_of_a_decorated_function_is_the_bodys(decorator: str) -> None:
    # Registering, dispatching and checking decorators run the body on every call: the
    # tests that ran its code object are the ones that depend on it (networkx decorates
    # two thirds of its functions).
    source = f"import nx\n\n\n@{decorator}\ndef f(x):\n    return x\n"
    head = source.replace("return x\n", "return x + 1\n")
    assert changed_functions(source.encode(), head.encode()) == [("f", 6, 6)]
    # The decorator line itself runs at import: changing it is module-level.
    moved = source.replace(f"@{decorator}", "@other")
    assert changed_functions(source.encode(), moved.encode()) is None


INSIDE = {
    "review-map.yml": "version: 1\nlanes:\n  replay:\n    tests: [pkg]\n",
    "pkg/__init__.py": "",
    "pkg/conftest.py": "",
    "pkg/calc.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
    "pkg/tests/__init__.py": "",
    "pkg/tests/test_add.py": "from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "pkg/tests/test_mul.py": "from pkg.calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
}


@pytest.mark.slow
def test_tests_inside_the_package_a_source_module_is_the_maps_to_judge(repo: GitRepo) -> None:
    # replay.tests names the package: its modules are source, not test files, so a change
    # inside a body selects the tests that ran it and collects only their files.
    for path, text in INSIDE.items():
        repo.write(path, text)
    base = repo.commit("tests inside the package")
    review_map = parse_review_map(INSIDE["review-map.yml"], "review-map.yml")
    dep = maprecord.record(repo.path, review_map, base, seed=3)
    repo.write("pkg/calc.py", INSIDE["pkg/calc.py"].replace("a * b", "a * b + 0"))
    head = repo.commit("mul, rewritten")
    selection = select_slice(
        repo.path,
        review_map,
        SliceRequest(
            head=head,
            merge_base=base,
            changed_paths=frozenset({"pkg/calc.py"}),
            failure_log=frozenset(),
            all_tests=False,
            dep_map=dep,
            dep_map_note="test map",
        ),
        base=base,
    )
    assert selection.nodeids == ("pkg/tests/test_mul.py::test_mul",)
    assert any("collected 1 of the base's 2 test file(s)" in n for n in selection.notes)


LAZY = {
    "pkg/__init__.py": "",
    "pkg/tables.py": "def build():\n    return {n: n * n for n in range(3)}\n",
    "pkg/heavy.py": "from pkg.tables import build\n\nTABLE = build()\n",
    "tests/test_a.py": "def test_a():\n    from pkg import heavy\n    assert len(heavy.TABLE) == 3\n",
    "tests/test_b.py": "def test_b():\n    from pkg import heavy\n    assert heavy.TABLE[2] == 4\n",
}


@pytest.mark.slow
def test_the_importers_of_a_module_a_needed_test_imported_first_are_selected(
    repo: GitRepo,
) -> None:
    # build() ran as heavy was first imported, inside test_a; test_b found heavy imported.
    repo.write("review-map.yml", MAP)
    for path, text in LAZY.items():
        repo.write(path, text)
    base = repo.commit("a module imported inside tests")
    dep = maprecord.record(repo.path, REVIEW_MAP, base, seed=3)
    assert dep.ran_file("pkg/tables.py") == {"tests/test_a.py::test_a"}
    repo.write("pkg/tables.py", LAZY["pkg/tables.py"].replace("n * n", "n ** 3"))
    repo.commit("cubes")
    assert set(_select(repo, base, dep).nodeids) == {
        "tests/test_a.py::test_a",
        "tests/test_b.py::test_b",
    }


@pytest.mark.slow
def test_a_module_level_change_that_makes_a_function_keep_state_selects_every_test(
    repo: GitRepo,
) -> None:
    # An import added at the top (module-level) and, in h, a store into another module:
    # the importers of pkg.m are not all the tests that may read what h now leaves.
    for path, text in STATEFUL.items():
        repo.write(path, text)
    repo.write("pkg/other.py", "LIMIT = 10\n")
    repo.write(
        "tests/test_other.py",
        "from pkg import other\n\n\ndef test_limit():\n    assert other.LIMIT == 10\n",
    )
    base = repo.commit("a module with a registry, and another module")
    dep = maprecord.record(repo.path, REVIEW_MAP, base, seed=3)
    head = STATEFUL["pkg/m.py"].replace("R = {}\n", "from pkg import other\n\nR = {}\n", 1)
    head = head.replace(
        "def h(x):\n    return x\n", "def h(x):\n    other.LIMIT = 3\n    return x\n"
    )
    repo.write("pkg/m.py", head)
    repo.commit("h lowers the other module's limit")
    assert "tests/test_other.py::test_limit" in set(_select(repo, base, dep).nodeids)


# --- durations -------------------------------------------------------------------------------


def _sealed(path: Path, doc: dict[str, object], base: str, cache_key: CacheKey) -> Path:
    """Write ``doc`` as a map of ``base`` (in the folder ``path``, named by its bytes), with
    a MAC that verifies."""
    data = (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()
    out = path / f"{hashlib.sha256(data).hexdigest()}.json"
    out.write_bytes(data)
    depmap.mac_path(out).write_bytes(cache_key.mac(depmap.PURPOSE, base, data).encode() + b"\n")
    return out


@pytest.mark.slow
def test_the_recording_keeps_the_slowest_test_s_duration_and_an_older_map_reads_without_it(
    repo: GitRepo, tmp_path: Path, cache_key: CacheKey
) -> None:
    repo.write("review-map.yml", MAP)
    repo.write(
        "tests/test_slow.py",
        "import time\n\n\ndef test_slow():\n    time.sleep(0.6)\n\n\ndef test_fast():\n    pass\n",
    )
    base = repo.commit("a slow test")
    dep = maprecord.record(repo.path, REVIEW_MAP, base, seed=3)
    # Timed by the parent, from the test's start to its end: what the bound derives from.
    assert dep.slowest_s is not None and dep.slowest_s >= 0.6
    path = dep.write(tmp_path, cache_key)
    assert depmap.read(path, cache_key) == dep
    doc = json.loads(path.read_bytes())
    older = {k: v for k, v in doc.items() if k != "slowest_s"}
    folder = path.parent  # the base's own folder: the MAC is bound to it
    assert depmap.read(_sealed(folder, older, base, cache_key), cache_key).slowest_s is None
    with pytest.raises(DependencyMapError, match="slowest_s"):
        depmap.read(_sealed(folder, {**doc, "slowest_s": -1}, base, cache_key), cache_key)
