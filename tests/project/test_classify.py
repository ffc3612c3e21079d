"""Classification of a patch against the merge base, under the base's review map."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from patchlane.errors import GitError, MapError, ReportError
from patchlane.formats.envelope import field_name
from patchlane.inputs.jsonio import write_json
from patchlane.project.classify import (
    ClassificationSummary,
    classify,
    map_path_in_repo,
    property_module_prefixes,
)
from patchlane.project.config import parse_review_map
from tests.gitrepo import (
    CLASSIFY_MAP,
    GitRepo,
    add_gitlink,
    add_symlink,
    commit_staged,
    make_project,
    move,
    start_patch,
)
from tests.unknownkey import KEY, add_json_key


def run(repo: GitRepo, map_option: str | None = None, base: str = "main") -> dict[str, Any]:
    return classify(repo.path, base, "HEAD", map_option).to_json()


def paths(result: dict[str, Any]) -> list[str]:
    return [f["path"] for f in result["files"]]


def entry(result: dict[str, Any], path: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [f for f in result["files"] if f["path"] == path]
    assert len(found) == 1, path
    return found[0]


def kinds(result: dict[str, Any]) -> set[tuple[str, str]]:
    return {(d["path"], d["kind"]) for d in result["control_plane_details"]}


# --- the diff ------------------------------------------------------------------------------


def test_diff_is_against_the_merge_base(repo: GitRepo) -> None:
    fork = make_project(repo)
    start_patch(repo)
    repo.write("src/billing/core.py", "patched\n")
    head = repo.commit("patch")
    repo.checkout("main")
    repo.write("README.md", "moved on\n")
    repo.write("later.txt", "added on main after the fork\n")
    base = repo.commit("main moves on")
    repo.checkout("patch")

    result = run(repo)
    assert paths(result) == ["src/billing/core.py"]
    assert (result["base"], result["head"], result["merge_base"]) == (base, head, fork)
    assert result["unmapped"] == []
    assert result["map_complete"] is True


def test_lanes_files_unmapped_and_ignored(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write("src/billing/core.py", "patched\n")
    repo.write("src/quota/new.py", "x = 1\n")
    repo.write("tests/fixtures/billing/invoice_min.json", '{"charge_cents": 1}\n')
    repo.write("docs/new.md", "prose\n")
    repo.write("tools/helper.py", "pass\n")
    repo.commit("patch")

    result = run(repo)
    assert result["files"] == [
        {"path": "docs/new.md", "status": "A", "old_path": None, "lanes": [],
         "ignored": "prose only"},
        {"path": "src/billing/core.py", "status": "M", "old_path": None, "lanes": ["property"]},
        {"path": "src/quota/new.py", "status": "A", "old_path": None, "lanes": ["property"]},
        {"path": "tests/fixtures/billing/invoice_min.json", "status": "M", "old_path": None,
         "lanes": ["fixture", "replay"]},
        {"path": "tools/helper.py", "status": "A", "old_path": None, "lanes": []},
    ]  # fmt: skip
    lanes = result["lanes"]
    assert lanes["property"] == {
        "status": "applicable",
        "reason": "2 changed path(s) in this lane",
        "files": ["src/billing/core.py", "src/quota/new.py"],
    }
    assert lanes["fixture"]["status"] == "applicable"
    assert lanes["fixture"]["files"] == ["tests/fixtures/billing/invoice_min.json"]
    assert lanes["freeze"] == {
        "status": "not_applicable",
        "reason": "no changed path is in the freeze lane's paths",
        "files": [],
    }
    assert lanes["replay"]["status"] == "applicable"
    assert result["unmapped"] == ["tools/helper.py"]
    assert result["control_plane"] == []
    assert result["map_complete"] is False
    assert "extend the map" in result["map_reason"]
    assert result["map"] == {"path": "review-map.yml", "source": "base", "changed_by_patch": False}


def test_every_lane_is_reported_even_when_not_configured(repo: GitRepo) -> None:
    make_project(repo, "lanes:\n  property:\n    paths: [src/]\n    module: checks.billing_props\n")
    start_patch(repo)
    repo.write("src/billing/core.py", "patched\n")
    repo.commit("patch")
    lanes = run(repo)["lanes"]
    assert list(lanes) == ["property", "fixture", "freeze", "replay"]
    assert lanes["fixture"] == {
        "status": "not_applicable",
        "reason": "the map has no fixture lane",
        "files": [],
    }
    assert lanes["freeze"]["reason"] == "the map has no freeze lane"
    assert lanes["replay"]["reason"] == "no changed path is in the replay lane's paths"


def test_map_complete_when_every_path_is_covered(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write("src/billing/core.py", "patched\n")
    repo.write("docs/more.md", "ignored but the patch has a mapped path too\n")
    repo.commit("patch")
    result = run(repo)
    assert result["map_complete"] is True
    assert result["unmapped"] == []


def test_ignored_only_patch_is_not_complete(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write("docs/guide.md", "only prose\n")
    repo.commit("patch")
    result = run(repo)
    assert result["unmapped"] == []
    assert entry(result, "docs/guide.md")["ignored"] == "prose only"
    assert all(lane["status"] == "not_applicable" for lane in result["lanes"].values())
    assert result["map_complete"] is False
    assert "no mapped path" in result["map_reason"]


def test_empty_diff_is_not_complete(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.commit("empty patch")
    result = run(repo)
    assert result["files"] == []
    assert result["map_complete"] is False
    assert result["map_reason"] == "the patch changes no file"


def test_unmapped_path_beats_ignored_and_mapped_ones(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write("src/billing/core.py", "patched\n")
    repo.write("docs/a.md", "x\n")
    repo.write("Makefile", "all:\n")
    repo.commit("patch")
    result = run(repo)
    assert result["unmapped"] == ["Makefile"]
    assert result["map_complete"] is False


# --- renames, deletions, type changes, submodules -----------------------------------------


def test_rename_out_of_the_fixture_root(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    move(repo, "tests/fixtures/billing/invoice_min.json", "archive/invoice_min.json")
    repo.commit("patch")
    result = run(repo)
    assert result["files"] == [
        {
            "path": "archive/invoice_min.json",
            "status": "R",
            "old_path": "tests/fixtures/billing/invoice_min.json",
            "lanes": ["fixture", "replay"],
        }
    ]
    assert result["lanes"]["fixture"]["status"] == "applicable"
    assert result["lanes"]["fixture"]["files"] == [
        "archive/invoice_min.json",
        "tests/fixtures/billing/invoice_min.json",
    ]
    assert result["unmapped"] == ["archive/invoice_min.json"]
    assert result["map_complete"] is False


def test_rename_into_a_lane_classifies_both_sides(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    move(repo, "src/quota/limits.py", "src/billing/limits.py")
    move(repo, "docs/guide.md", "tools/guide.md")
    repo.commit("patch")
    result = run(repo)
    moved = entry(result, "src/billing/limits.py")
    assert (moved["status"], moved["old_path"], moved["lanes"]) == (
        "R",
        "src/quota/limits.py",
        ["property"],
    )
    assert result["lanes"]["property"]["files"] == ["src/billing/limits.py", "src/quota/limits.py"]
    # ignored on the old side, unmapped on the new: the new side is what matters
    assert entry(result, "tools/guide.md")["old_path"] == "docs/guide.md"
    assert result["unmapped"] == ["tools/guide.md"]


def test_deletion(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.remove("tests/fixtures/billing/invoice_min.json")
    repo.commit("patch")
    result = run(repo)
    assert result["files"] == [
        {
            "path": "tests/fixtures/billing/invoice_min.json",
            "status": "D",
            "old_path": None,
            "lanes": ["fixture", "replay"],
        }
    ]
    assert result["lanes"]["fixture"]["status"] == "applicable"


def test_type_change_to_symlink(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    add_symlink(repo, "src/billing/core.py", "/etc/passwd")
    repo.commit("patch")
    result = run(repo)
    assert result["files"] == [
        {"path": "src/billing/core.py", "status": "T", "old_path": None, "lanes": ["property"]}
    ]


def test_submodule_gitlinks(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    add_gitlink(repo, "vendor/lib", "a" * 40)
    add_gitlink(repo, "src/billing/engine", "b" * 40)
    commit_staged(repo, "patch")
    result = run(repo)
    assert result["files"] == [
        {"path": "src/billing/engine", "status": "A", "old_path": None, "lanes": ["property"]},
        {"path": "vendor/lib", "status": "A", "old_path": None, "lanes": []},
    ]
    assert result["unmapped"] == ["vendor/lib"]


ODD_NAMES = [
    b"src/billing/with space.py",
    b"src/billing/new\nline.py",
    b'src/billing/double"quote.py',
    b"src/billing/tab\there.py",
    "src/billing/café_日本.py".encode(),
    b"src/billing/caf\xe9.py",
    b"src/billing/\\backslash.py",
]


def test_odd_file_names_are_reported_exactly(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    for raw in ODD_NAMES:
        repo.write(raw, "x\n")
    repo.write(b"caf\xe9.txt", "unmapped\n")
    repo.commit("patch")
    result = run(repo)
    reported = {os.fsencode(p) for p in paths(result)}
    assert reported == {*ODD_NAMES, b"caf\xe9.txt"}
    for raw in ODD_NAMES:
        assert entry(result, os.fsdecode(raw))["lanes"] == ["property"]
    assert [os.fsencode(p) for p in result["unmapped"]] == [b"caf\xe9.txt"]


# --- control plane -------------------------------------------------------------------------

HARNESS = "test harness"

CONTROL_CASES: list[tuple[str, dict[str, str], set[tuple[str, str]]]] = [
    ("map", {"review-map.yml": CLASSIFY_MAP + "# edited\n"}, {("review-map.yml", "review map")}),
    ("lock", {"tests/fixtures/billing/LOCK.json": '{"files": [], "reason": "x"}\n'},
     {("tests/fixtures/billing/LOCK.json", "fixture lock")}),
    ("registry", {"tests/flaky-freeze.yml": "freezes: []\n# x\n"},
     {("tests/flaky-freeze.yml", "freeze registry")}),
    ("property module", {"checks/billing_props.py": "# weakened\n"},
     {("checks/billing_props.py", "property module")}),
    ("its package", {"checks/__init__.py": "import os\n", "checks/helpers/util.py": ""},
     {("checks/__init__.py", "property module"), ("checks/helpers/util.py", "property module")}),
    ("conftest at any depth",
     {"conftest.py": "", "tests/conftest.py": "", "src/billing/deep/er/conftest.py": ""},
     {("conftest.py", HARNESS), ("tests/conftest.py", HARNESS),
      ("src/billing/deep/er/conftest.py", HARNESS)}),
    ("pytest.ini", {"pytest.ini": "[pytest]\n", "sub/.pytest.ini": ""},
     {("pytest.ini", HARNESS), ("sub/.pytest.ini", HARNESS)}),
    ("pyproject section", {"pyproject.toml": '[project]\nname = "x"\n\n[tool.pytest.ini_options]\naddopts = "-p x"\n'},
     {("pyproject.toml", HARNESS)}),
    ("pyproject dotted key", {"pyproject.toml": '[tool]\npytest.ini_options.addopts = "-p evil"\n'},
     {("pyproject.toml", HARNESS)}),
    ("pyproject inline table", {"pyproject.toml": 'tool = {pytest = {ini_options = {addopts = "-p evil"}}}\n'},
     {("pyproject.toml", HARNESS)}),
    ("setup.cfg", {"setup.cfg": "[metadata]\nname = x\n\n[tool:pytest]\naddopts = -p x\n"},
     {("setup.cfg", HARNESS)}),
    ("tox.ini", {"tox.ini": "[tox]\nenvlist = py311\n[pytest]\naddopts = -p x\n"},
     {("tox.ini", HARNESS)}),
    ("sitecustomize", {"sitecustomize.py": "", "lib/usercustomize.py": ""},
     {("sitecustomize.py", HARNESS), ("lib/usercustomize.py", HARNESS)}),
    ("pth", {"venv/lib/site-packages/evil.pth": "import os\n"},
     {("venv/lib/site-packages/evil.pth", HARNESS)}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("files", "expected"), [c[1:] for c in CONTROL_CASES], ids=[c[0] for c in CONTROL_CASES]
)
def test_control_plane_kinds(
    repo: GitRepo, files: dict[str, str], expected: set[tuple[str, str]]
) -> None:
    make_project(repo)
    start_patch(repo)
    for rel, content in files.items():
        repo.write(rel, content)
    repo.commit("patch")
    result = run(repo)
    assert kinds(result) == expected
    assert result["control_plane"] == sorted({p for p, _ in expected})
    assert result["harness_changed"] is any(k == HARNESS for _, k in expected)
    for rel in files:
        assert entry(result, rel)["control_plane"] == [k for p, k in sorted(expected) if p == rel]


@pytest.mark.parametrize(
    ("rel", "content"),
    [
        ("pyproject.toml", '[project]\nname = "x"\n[tool.ruff]\nline-length = 100\n'),
        ("pyproject.toml", "[tool.black]\n# see [tool.pytest.ini_options] in pytest.ini\n"),
        ("setup.cfg", "[metadata]\nname = x\n"),
        ("tox.ini", "[tox]\nenvlist = py311\n"),
        ("src/billing/conftest_helpers.py", ""),
        ("src/billing/pytest_ini.py", ""),
    ],
)
def test_config_files_without_pytest_sections_are_not_control(
    repo: GitRepo, rel: str, content: str
) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write(rel, content)
    repo.commit("patch")
    result = run(repo)
    assert result["control_plane"] == []
    assert result["harness_changed"] is False


@pytest.mark.parametrize(
    ("base_text", "head_text"),
    [
        ('[project]\nname = "x"\n[tool.pytest.ini_options]\naddopts = "-q"\n', '[project]\nname = "x"\n'),
        ('[project]\nname = "x"\n', '[project]\nname = "x"\n[tool.pytest.ini_options]\naddopts = "-q"\n'),
        ('[project]\nname = "x"\n[tool.pytest.ini_options]\naddopts = "-q"\n', None),
    ],
    ids=["section removed", "section added", "file deleted"],
)  # fmt: skip
def test_pyproject_section_counts_on_either_side(
    repo: GitRepo, base_text: str, head_text: str | None
) -> None:
    make_project(repo)
    repo.write("pyproject.toml", base_text)
    repo.commit("base pyproject")
    start_patch(repo)
    if head_text is None:
        repo.remove("pyproject.toml")
    else:
        repo.write("pyproject.toml", head_text)
    repo.commit("patch")
    result = run(repo)
    assert kinds(result) == {("pyproject.toml", HARNESS)}


def test_harness_rename_counts_on_both_sides(repo: GitRepo) -> None:
    make_project(repo)
    repo.write("tests/conftest.py", "import pytest\n" * 20)
    repo.commit("base conftest")
    start_patch(repo)
    move(repo, "tests/conftest.py", "tests/helpers_conftest.py")
    repo.commit("patch")
    result = run(repo)
    assert ("tests/conftest.py", HARNESS) in kinds(result)


# --- which map decides ---------------------------------------------------------------------


def test_base_map_governs_a_patch_that_edits_the_map(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write("tools/helper.py", "pass\n")
    repo.write(
        "review-map.yml",
        CLASSIFY_MAP + '  - path: "tools/"\n    reason: "the agent says so"\n',
    )
    repo.commit("patch")
    result = run(repo)
    assert result["unmapped"] == ["tools/helper.py"]
    assert "tools/helper.py" not in [f["path"] for f in result["files"] if "ignored" in f]
    assert ("review-map.yml", "review map") in kinds(result)
    assert result["map"] == {"path": "review-map.yml", "source": "base", "changed_by_patch": True}
    assert result["map_complete"] is False


def test_base_map_governs_even_when_the_head_map_is_broken(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write("src/billing/core.py", "patched\n")
    repo.write("review-map.yml", "lanes: [this is: not valid\n")
    repo.commit("patch")
    result = run(repo)
    assert result["map"]["source"] == "base"
    assert result["map_complete"] is True
    # Not the user's input error (the base's map decides), but the patch's: said, for rule 6.
    problem = result["map"]["head_problem"]
    assert problem.startswith("review-map.yml:2: YAML syntax error: ")
    assert "(the map in head " in problem


def test_base_map_is_read_from_the_base_commit_not_the_merge_base(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write("tools/helper.py", "pass\n")
    repo.commit("patch")
    repo.checkout("main")
    repo.write("review-map.yml", CLASSIFY_MAP + '  - path: "tools/"\n    reason: "scripts"\n')
    repo.commit("main extends the map")
    repo.checkout("patch")
    result = run(repo)
    assert result["unmapped"] == []
    assert entry(result, "tools/helper.py")["ignored"] == "scripts"


def test_head_map_is_used_when_the_base_has_none(repo: GitRepo) -> None:
    make_project(repo, review_map=None)
    start_patch(repo)
    repo.write("review-map.yml", CLASSIFY_MAP)
    repo.write("src/billing/core.py", "patched\n")
    repo.commit("patch")
    result = run(repo)
    assert result["map"] == {"path": "review-map.yml", "source": "head", "changed_by_patch": True}
    assert entry(result, "src/billing/core.py")["lanes"] == ["property"]
    assert ("review-map.yml", "review map") in kinds(result)


def test_no_map_anywhere_is_an_error(repo: GitRepo) -> None:
    make_project(repo, review_map=None)
    start_patch(repo)
    repo.write("src/billing/core.py", "patched\n")
    repo.commit("patch")
    with pytest.raises(MapError, match=r"^review-map\.yml: no review map at base or head"):
        run(repo)


def test_malformed_base_map_names_file_and_line(repo: GitRepo) -> None:
    make_project(repo, CLASSIFY_MAP.replace("max_age_days: 14", "max_age_days: fourteen"))
    start_patch(repo)
    repo.write("src/billing/core.py", "patched\n")
    repo.commit("patch")
    with pytest.raises(MapError) as info:
        run(repo)
    assert info.value.line == 11
    assert str(info.value).startswith("review-map.yml:11: lanes.freeze.max_age_days: ")


def test_map_outside_the_repo_is_read_from_disk(repo: GitRepo, tmp_path: Path) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write("tools/helper.py", "pass\n")
    repo.commit("patch")
    outside = tmp_path / "elsewhere" / "my-map.yml"
    outside.parent.mkdir()
    outside.write_text(CLASSIFY_MAP + '  - path: "tools/"\n    reason: "local scripts"\n')
    result = run(repo, os.fspath(outside))
    assert result["map"] == {
        "path": os.fspath(outside),
        "source": "file",
        "changed_by_patch": False,
    }
    assert entry(result, "tools/helper.py")["ignored"] == "local scripts"


def test_map_inside_the_repo_is_read_from_the_base_commit(repo: GitRepo) -> None:
    make_project(repo, review_map=None)
    repo.write("maps/alt.yml", CLASSIFY_MAP)
    repo.commit("alternative map")
    start_patch(repo)
    repo.write("src/billing/core.py", "patched\n")
    repo.commit("patch")
    (repo.path / "maps" / "alt.yml").write_text("not: [valid\n")  # uncommitted: ignored
    result = run(repo, os.fspath(repo.path / "maps" / "alt.yml"))
    assert result["map"] == {"path": "maps/alt.yml", "source": "base", "changed_by_patch": False}
    assert result["map_complete"] is True


def test_symlinked_map_in_the_base_commit_is_refused(repo: GitRepo) -> None:
    make_project(repo, review_map=None)
    repo.write("maps/real.yml", CLASSIFY_MAP)
    add_symlink(repo, "review-map.yml", "maps/real.yml")
    repo.commit("map is a symlink")
    start_patch(repo)
    repo.write("src/billing/core.py", "patched\n")
    repo.commit("patch")
    with pytest.raises(MapError, match="not a regular file"):
        run(repo)
    # naming the symlink explicitly does not follow it either
    with pytest.raises(MapError, match="not a regular file"):
        run(repo, os.fspath(repo.path / "review-map.yml"))


def test_map_path_in_repo(repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert map_path_in_repo(repo.path, None) == ("review-map.yml", None)
    assert map_path_in_repo(repo.path, os.fspath(repo.path / "a" / "m.yml")) == ("a/m.yml", None)
    monkeypatch.chdir(repo.path)
    assert map_path_in_repo(repo.path, "a/m.yml") == ("a/m.yml", None)
    outside = tmp_path / "o.yml"
    assert map_path_in_repo(repo.path, os.fspath(outside)) == (None, outside)
    add_symlink(repo, "link.yml", os.fspath(outside))
    assert map_path_in_repo(repo.path, "link.yml") == ("link.yml", None)


def test_property_module_prefixes() -> None:
    m = parse_review_map(
        "lanes:\n  property:\n    paths: []\n    modules: [checks.billing_props, props]\n"
        "    pythonpath: [lib, vendor/]\n",
        "m.yml",
    )
    assert property_module_prefixes(m) == (
        "checks/",
        "src/checks/",
        "lib/checks/",
        "vendor/checks/",
        "props.py",
        "props/",
        "src/props.py",
        "src/props/",
        "lib/props.py",
        "lib/props/",
        "vendor/props.py",
        "vendor/props/",
    )


# --- git is asked precisely ----------------------------------------------------------------


def test_caller_git_environment_does_not_change_the_answer(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write("src/billing/core.py", "patched\n")
    repo.write("tools/helper.py", "pass\n")
    repo.commit("patch")
    expected = run(repo)

    other = GitRepo(tmp_path / "other")
    other.write("review-map.yml", "lanes: {}\n")
    other.write("unrelated.txt", "x\n")
    other.commit("other")
    monkeypatch.setenv("GIT_DIR", os.fspath(other.path / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", os.fspath(other.path))
    monkeypatch.setenv("GIT_INDEX_FILE", os.fspath(tmp_path / "bogus-index"))
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", os.fspath(other.path / ".git" / "objects"))
    assert run(repo) == expected


def test_unknown_ref_is_a_git_error(repo: GitRepo) -> None:
    make_project(repo)
    with pytest.raises(GitError, match="fetch"):
        run(repo, base="origin/nope")


def test_a_fixture_change_makes_the_property_lane_run_on_the_new_bytes(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write("tests/fixtures/billing/invoice_min.json", '{"charge_cents": 1}\n')
    repo.commit()
    lanes = run(repo)["lanes"]
    assert lanes["fixture"]["status"] == "applicable"
    assert lanes["property"]["status"] == "applicable"
    assert "new bytes" in lanes["property"]["reason"]
    assert lanes["property"]["files"] == []


def test_a_docs_change_does_not_make_the_property_lane_applicable(repo: GitRepo) -> None:
    make_project(repo)
    start_patch(repo)
    repo.write("docs/guide.md", "# Guide, longer\n")
    repo.commit()
    assert run(repo)["lanes"]["property"]["status"] == "not_applicable"


DOCTEST_CONFIG = """\
[tool.pytest.ini_options]
testpaths = ["tests", "docs"]
addopts = "--doctest-glob=*.md"
"""


@pytest.mark.parametrize(
    ("path", "config", "collected"),
    [
        ("docs/guide.md", DOCTEST_CONFIG, "a text doctest by --doctest-glob *.md"),
        ("docs/test_api.py", None, "a test module by python_files (test_*.py *_test.py)"),
        ("docs/test_guide.txt", None, "a text doctest by --doctest-glob test*.txt"),
        ("docs/conf.py", DOCTEST_CONFIG, None),  # not a test module: still prose
        ("docs/guide.md", DOCTEST_CONFIG.replace(', "docs"', ""), None),  # outside testpaths
    ],
)
def test_an_ignore_entry_never_covers_a_file_the_suite_collects(
    repo: GitRepo, path: str, config: str | None, collected: str | None
) -> None:
    if config is not None:
        repo.write("pyproject.toml", config)
    make_project(repo)
    start_patch(repo)
    repo.write("src/billing/core.py", "def net(charge, refund):\n    return charge - refund - 0\n")
    repo.write(path, ">>> 1 + 1\n2\n")
    repo.commit("patch")
    cls = classify(repo.path, "main", "HEAD", None)
    result = cls.to_json()
    if collected is None:
        assert entry(result, path)["ignored"] == "prose only"
        assert cls.map_source.review_map.replay.tests == ("tests/",)
        return
    assert "ignored" not in entry(result, path)
    assert entry(result, path)["lanes"] == ["replay"]
    assert entry(result, path)["collected"] == (
        f"{collected}; the map's ignore entry (prose only) does not cover it"
    )
    assert result["lanes"]["replay"]["files"] == [path]
    assert result["map_complete"] is True
    # Every lane judges it as a test file: it is among the deciding map's test paths.
    assert cls.map_source.review_map.replay.tests == ("tests/", path)
    assert cls.patch.review_map.replay.tests == ("tests/", path)


@pytest.mark.parametrize(
    "at",
    [(), ("map",), ("files", 0), ("lanes",), ("lanes", "replay"), ("control_plane_details", 0)],
    ids=["top", "map", "file", "lanes", "lane", "control-plane"],
)
def test_classify_json_with_an_unknown_key_is_refused_naming_its_line(
    repo: GitRepo, tmp_path: Path, at: tuple[str | int, ...]
) -> None:
    # ``patchlane verdict --classify`` and ``review`` read the file back: a key the format
    # does not have is refused where it is, also in the parts the summary does not keep.
    make_project(repo)
    start_patch(repo)
    repo.write("review-map.yml", CLASSIFY_MAP + "# the patch edits the map\n")
    repo.write("src/billing/core.py", "patched\n")
    repo.commit("patch")
    path = tmp_path / "classify.json"
    write_json(path, classify(repo.path, "main", "HEAD", None).to_json())
    assert ClassificationSummary.read(path).map_changed  # as written, it reads
    line = add_json_key(path, at)
    with pytest.raises(ReportError) as info:
        ClassificationSummary.read(path)
    assert str(info.value).startswith(f"{path}:{line}: {field_name((*at, KEY))}: unknown key")


# --- lanes.replay.paths: code judged by the base's tests alone --------------------------------

# The classify map with ``src/`` left to the replay: ``src/billing/`` keeps its properties.
ALONE_MAP = CLASSIFY_MAP.replace(
    "lanes:\n", 'lanes:\n  replay:\n    paths: ["src/"]\n    seed: 5\n', 1
)


def test_code_under_replay_paths_is_covered_and_named_as_judged_by_tests_alone(
    repo: GitRepo,
) -> None:
    make_project(repo, ALONE_MAP)
    start_patch(repo)
    repo.write("src/legacy/old.py", "X = 1\n")
    repo.write("src/billing/core.py", "def net(charge, refund):\n    return refund\n")
    repo.commit("patch")
    result = run(repo)
    assert result["unmapped"] == []
    assert result["map_complete"] is True
    assert entry(result, "src/legacy/old.py")["lanes"] == ["replay"]
    # Under a property lane's paths too: the properties judge it, not the tests alone.
    assert entry(result, "src/billing/core.py")["lanes"] == ["property", "replay"]
    assert result["tests_alone"] == ["src/legacy/old.py"]
    # The property lane runs for src/billing/ (its reason is its own).
    assert result["lanes"]["property"]["status"] == "applicable"
    summary = ClassificationSummary.from_json(result, "classify.json")
    assert summary.tests_alone == ("src/legacy/old.py",)


def test_the_property_lane_names_the_paths_the_tests_alone_judge(repo: GitRepo) -> None:
    make_project(repo, ALONE_MAP)
    start_patch(repo)
    repo.write("src/legacy/old.py", "X = 1\n")
    repo.commit("patch")
    result = run(repo)
    assert result["lanes"]["property"] == {
        "status": "not_applicable",
        "reason": "no property covers src/legacy/old.py: lanes.replay.paths names them, so "
        "the base's tests alone judge them (the replay)",
        "files": [],
    }
    # A map with no property lane at all says the same.
    repo.checkout("main")
    repo.write("review-map.yml", 'version: 1\nlanes:\n  replay:\n    paths: ["src/"]\n')
    repo.commit("the replay alone")
    repo.git("branch", "-f", "patch", "main")
    repo.checkout("patch")
    repo.write("src/legacy/old.py", "X = 2\n")
    repo.commit("patch")
    result = run(repo)
    assert result["map_complete"] is True
    assert result["lanes"]["property"]["reason"].startswith("no property covers src/legacy/old.py")


def test_a_patch_outside_replay_paths_is_unmapped_and_has_no_tests_alone_key(
    repo: GitRepo,
) -> None:
    make_project(repo, ALONE_MAP)
    start_patch(repo)
    repo.write("tools/helper.py", "X = 1\n")
    repo.commit("patch")
    result = run(repo)
    assert result["unmapped"] == ["tools/helper.py"]
    assert "tests_alone" not in result
    assert "under lanes.replay.paths to judge it by the base's tests alone" in result["map_reason"]
