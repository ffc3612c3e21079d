"""The canary: a random sample of the tests outside the slice, drawn after selection.

Selections are real: a project committed in a temp git repository, collected by a real
pytest child (``select_slice``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from patchlane.errors import MapError
from patchlane.formats.slicefile import parse
from patchlane.lanes.replay import canary, maprecord
from patchlane.lanes.replay.canary import ENV, CanarySetting, draw, setting_for
from patchlane.lanes.replay.select import select_slice
from patchlane.lanes.replay.selection import SliceRequest
from patchlane.project.config import parse_review_map
from tests.formats import test_depmap as shop
from tests.gitrepo import GitRepo
from tests.lanes.replay.test_select import patch, project, select

MAP = """\
version: 1
lanes:
  property:
    paths: ["pkg/"]
    module: "checks.props"
  replay:
    tests: ["tests/"]
{canary}"""


def many_tests(count: int, canary_setting: str) -> dict[str, str]:
    """A package ``pkg`` with its test file, and ``count`` tests of an unrelated module in
    ten files: none of those is selected by a patch to ``pkg``."""
    files = {
        "review-map.yml": MAP.format(canary=canary_setting),
        "checks/__init__.py": "",
        "checks/props.py": "",
        "pkg/__init__.py": "",
        "pkg/calc.py": "def add(a, b):\n    return a + b\n",
        "other.py": "O = 1\n",
        "tests/test_calc.py": "from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    }
    per_file = count // 10
    for f in range(10):
        body = "".join(f"\n\ndef test_o{i}():\n    assert other.O\n" for i in range(per_file))
        files[f"tests/test_other{f}.py"] = "import other\n" + body
    return files


def test_the_size_is_the_share_or_the_minimum_whichever_is_more_capped_at_what_there_is() -> None:
    setting = CanarySetting()
    assert setting.size(611) == 31  # ceil(5% of 611)
    assert setting.size(100) == 20
    assert setting.size(7) == 7
    assert CanarySetting(0.0, 0).size(1000) == 0
    assert CanarySetting(1.0, 0).size(12) == 12


def test_a_draw_takes_from_the_pool_only_and_names_how_many_were_outside() -> None:
    pool = [f"t.py::t{i}" for i in range(50)]
    drawn = draw(pool, 400, CanarySetting(0.05, 3))
    assert len(drawn.nodeids) == 20  # ceil(5% of 400), and the pool holds enough
    assert set(drawn.nodeids) <= set(pool)
    assert list(drawn.nodeids) == sorted(drawn.nodeids)
    assert drawn.note_line() == "canary: 20 of 400 tests outside the slice, drawn at random"


def test_the_map_sets_the_canary_and_the_environment_only_turns_the_default_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def replay_canary(text: str) -> CanarySetting | None:
        return parse_review_map(MAP.format(canary=text), "review-map.yml").replay.canary

    assert replay_canary("") is None
    assert replay_canary("    canary: {share: 0.1, min: 3}\n") == CanarySetting(
        0.1, 3, "review map"
    )
    for off in ("off", "false", "0"):
        setting = replay_canary(f"    canary: {off}\n")
        assert setting is not None and setting.off
    for bad in ("{share: 1.5}", "{min: -1}", "{size: 3}", "3", "yes please"):
        with pytest.raises(MapError, match=r"review-map\.yml:8: lanes\.replay\.canary"):
            replay_canary(f"    canary: {bad}\n")
    monkeypatch.setenv(ENV, "off")
    assert setting_for(None).off and setting_for(None).source == canary.ENV_SOURCE
    written = CanarySetting(0.5, 1, "review map")
    assert setting_for(written) == written  # the base's map decides
    monkeypatch.delenv(ENV)
    assert setting_for(None) == CanarySetting()


@pytest.mark.slow
def test_the_canary_joins_the_slice_from_outside_it_with_its_reason(repo: GitRepo) -> None:
    project(repo, many_tests(40, "    canary: {share: 0, min: 5}\n"))
    patch(repo, {"pkg/calc.py": "def add(a, b):\n    return b + a\n"})
    sel = select(repo)
    assert sel.canary is not None
    drawn = sel.canary.nodeids
    assert len(drawn) == 5 and sel.canary.outside == 40
    assert all(n.startswith("tests/test_other") for n in drawn)
    assert set(sel.nodeids) == {"tests/test_calc.py::test_add", *drawn}
    assert tuple(parse(sel.slice_bytes, "slice")) == sel.nodeids  # hashed with the slice
    for nodeid in drawn:
        assert sel.reasons[nodeid] == [canary.REASON]
    assert sel.rule_counts["canary"] == 5
    assert sel.to_json("s")["canary"]["nodeids"] == list(drawn)


@pytest.mark.slow
def test_two_selections_of_one_patch_draw_different_canaries(repo: GitRepo) -> None:
    # 200 tests outside the slice, 20 drawn: two draws are equal with probability
    # 1 / C(200, 20), about 6e-28 -- never, in practice.
    project(repo, many_tests(200, "    canary: {share: 0, min: 20}\n"))
    patch(repo, {"pkg/calc.py": "def add(a, b):\n    return b + a\n"})
    first, second = select(repo), select(repo)
    assert first.canary is not None and second.canary is not None
    assert len(first.canary.nodeids) == len(second.canary.nodeids) == 20
    assert first.canary.nodeids != second.canary.nodeids
    assert first.sha256 != second.sha256


@pytest.mark.slow
def test_no_canary_under_all_nor_for_an_empty_selection(repo: GitRepo) -> None:
    project(repo, many_tests(20, "    canary: {share: 1, min: 0}\n"))
    patch(repo, {"pkg/calc.py": "def add(a, b):\n    return b + a\n"})
    whole = select(repo, all_tests=True)
    assert whole.canary is None and len(whole.nodeids) == 21
    repo.git("reset", "-q", "--hard", "main")
    patch(repo, {"README.md": "readme\n"})  # reaches no test: the slice stays empty
    empty = select(repo)
    assert empty.nodeids == () and empty.canary is None


@pytest.mark.slow
def test_with_the_canary_off_the_slice_is_the_selection_and_the_note_says_so(
    repo: GitRepo,
) -> None:
    project(repo, many_tests(20, "    canary: off\n"))
    patch(repo, {"pkg/calc.py": "def add(a, b):\n    return b + a\n"})
    sel = select(repo)
    assert sel.nodeids == ("tests/test_calc.py::test_add",)
    assert sel.canary is not None and sel.canary.nodeids == ()
    assert sel.canary.note_line().startswith("canary: off (replay.canary in the review map)")


@pytest.mark.slow
def test_with_a_dependency_map_the_canary_reaches_files_the_map_would_not_collect(
    tmp_path: Path,
) -> None:
    repo = GitRepo(tmp_path / "repo")
    base = shop.make_shop(repo)
    recorded = maprecord.record(repo.path, shop.REVIEW_MAP, base, seed=3)
    repo.branch("patch")
    repo.checkout("patch")
    repo.write("shop/__init__.py", shop.SHOP.replace("return n - 1", "return n - 2"))
    repo.commit("a bigger discount")
    every = parse_review_map(shop.MAP + "    canary: {share: 1, min: 0}\n", "review-map.yml")
    changed = frozenset({"shop/__init__.py"})
    request = SliceRequest(
        head=repo.head(), merge_base=base, changed_paths=changed, failure_log=frozenset(),
        all_tests=False, dep_map=recorded, dep_map_note="test map",
    )  # fmt: skip
    sel = select_slice(repo.path, every, request, base=base)
    assert shop.BIG in sel.nodeids and sel.canary is not None
    # The map alone collects test_discount.py; the canary drew from every other file too.
    assert {shop.PLAIN, shop.PRICE} <= set(sel.canary.nodeids)
    assert set(sel.nodeids) >= set(recorded.tests)
    assert any(n.startswith("canary: collected ") for n in sel.notes)
