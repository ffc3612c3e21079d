"""``patchlane init``: scaffold a map, a registry and locks in a real git repository."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from patchlane.errors import LockError, MapError
from patchlane.inputs.yamlio import load_yaml
from patchlane.lanes.fixture.lockfile import parse_lock
from patchlane.lanes.freeze.registry import RegistryError, parse_registry
from patchlane.main import main
from patchlane.project.config import ReviewMap, parse_review_map
from tests.gitrepo import GitRepo
from tests.unknownkey import KEY, add_json_key, add_yaml_key

INIT_REASON = "initial lock by patchlane init"


def _project(
    repo: GitRepo, *, props: bool = False, fixture_roots: tuple[str, ...] = ("billing",)
) -> None:
    """A src-layout project; ``props``: with a property module (init runs it once in the
    sandbox, which takes a second: only the tests about the property lane ask for it)."""
    repo.write("src/billing/__init__.py", "def apply_refund(c, r):\n    return c - r\n")
    repo.write("src/quota/__init__.py", "LIMIT = 10\n")
    repo.write("src/notes/README.txt", "not a package: no __init__.py\n")
    repo.write("checks/__init__.py", "")
    if props:
        repo.write("checks/props.py", "def prop_ok(seed, n=200):\n    pass\n")
    for name in fixture_roots:
        repo.write(f"tests/fixtures/{name}/a.json", f'{{"root": "{name}"}}\n')
        repo.write(f"tests/fixtures/{name}/deep/b.txt", f"{name} bytes\n")
    repo.write("tests/test_x.py", "def test_x():\n    assert True\n")
    repo.commit("project")


def _init(repo: GitRepo, *args: str) -> int:
    return main(["--repo", os.fspath(repo.path), "init", *args])


def _map(repo: GitRepo) -> tuple[str, ReviewMap]:
    text = (repo.path / "review-map.yml").read_text(encoding="utf-8")
    return text, parse_review_map(text, "review-map.yml")


@pytest.mark.slow
def test_scaffolds_map_registry_and_a_verified_lock(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo, props=True)
    assert _init(repo) == 0
    out = capsys.readouterr().out
    for written in ("review-map.yml", "tests/flaky-freeze.yml", "tests/fixtures/billing/LOCK.json"):
        assert f"wrote {written}" in out

    text, review_map = _map(repo)
    assert review_map.property is not None
    assert review_map.property.paths == ("src/billing/", "src/quota/")
    assert review_map.property.modules == ("checks.props",)
    fixture = review_map.fixture
    assert fixture is not None
    assert fixture.paths == ("tests/fixtures/billing/",)
    assert fixture.locks == ("tests/fixtures/billing/LOCK.json",)
    assert review_map.freeze is not None
    assert review_map.freeze.registry == "tests/flaky-freeze.yml"
    assert review_map.replay.tests == ("tests/",)
    # One root is written in the seed's form, not as a one-element 'roots' list.
    assert "roots:" not in text

    registry = (repo.path / "tests" / "flaky-freeze.yml").read_text(encoding="utf-8")
    assert load_yaml(registry, "flaky-freeze.yml") == {"freezes": []}
    assert "required_properties" in registry  # the comment explains the record's fields

    lock = json.loads((repo.path / "tests/fixtures/billing/LOCK.json").read_text("utf-8"))
    assert lock["reason"] == INIT_REASON
    assert sorted(row["path"] for row in lock["files"]) == [
        "tests/fixtures/billing/a.json",
        "tests/fixtures/billing/deep/b.txt",
    ]
    assert main(["--repo", os.fspath(repo.path), "-q", "fixture", "check"]) == 0


def test_the_lock_catches_a_later_edit(repo: GitRepo) -> None:
    _project(repo)
    assert _init(repo, "-q") == 0
    (repo.path / "tests/fixtures/billing/a.json").write_text('{"root": "edited"}\n')
    assert main(["--repo", os.fspath(repo.path), "-q", "fixture", "check"]) == 1


@pytest.mark.slow
def test_scaffold_gates_a_silent_fixture_edit_as_reject(repo: GitRepo, tmp_path: Path) -> None:
    _project(repo)
    assert _init(repo, "-q") == 0
    repo.commit("patchlane init")
    repo.branch("agent")
    repo.write("tests/fixtures/billing/a.json", '{"root": "edited"}\n')
    repo.commit("agent edit")
    code = main(
        ["--repo", os.fspath(repo.path), "-q", "gate", "--base", "main", "--seed", "1",
         "--cases", "10", "--out-dir", os.fspath(tmp_path / "out")]
    )  # fmt: skip
    assert code == 1
    report = json.loads((tmp_path / "out" / "fixture-report.json").read_text("utf-8"))
    assert report["changed"] == ["tests/fixtures/billing/a.json"]


def test_several_fixture_roots_use_the_roots_form(repo: GitRepo) -> None:
    _project(repo, fixture_roots=("billing", "users"))
    assert _init(repo, "-q") == 0
    text, review_map = _map(repo)
    assert "roots:" in text
    assert review_map.fixture is not None
    assert review_map.fixture.locks == (
        "tests/fixtures/billing/LOCK.json",
        "tests/fixtures/users/LOCK.json",
    )
    for root in ("billing", "users"):
        lock = json.loads((repo.path / f"tests/fixtures/{root}/LOCK.json").read_text("utf-8"))
        assert {row["path"] for row in lock["files"]} == {
            f"tests/fixtures/{root}/a.json",
            f"tests/fixtures/{root}/deep/b.txt",
        }
    assert main(["--repo", os.fspath(repo.path), "-q", "fixture", "check"]) == 0


def test_fixtures_option_chooses_the_roots(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(repo, fixture_roots=("billing", "users"))
    repo.write("data/golden/out.bin", b"\x00\x01golden")
    monkeypatch.chdir(repo.path / "tests")  # --fixtures is relative to the current directory
    assert _init(repo, "-q", "--fixtures", "../data/golden", "--fixtures", "fixtures/users/") == 0
    _, review_map = _map(repo)
    assert review_map.fixture is not None
    assert review_map.fixture.paths == ("data/golden/", "tests/fixtures/users/")
    assert not (repo.path / "tests/fixtures/billing/LOCK.json").exists()
    assert (repo.path / "data/golden/LOCK.json").is_file()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("/", "not inside the repository"),
        ("src/billing/__init__.py", "not a directory"),
        ("link", "is a symlink"),
        (".", "repository root cannot be a fixture root"),
    ],
)
def test_bad_fixtures_option_is_exit_2(
    repo: GitRepo,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    option: str,
    message: str,
) -> None:
    _project(repo)
    (repo.path / "link").symlink_to("tests/fixtures/billing")
    monkeypatch.chdir(repo.path)
    assert _init(repo, "--fixtures", option) == 2
    assert message in capsys.readouterr().err
    assert not (repo.path / "review-map.yml").exists()


def test_without_properties_the_code_is_judged_by_its_tests_and_the_map_holds_the_seed(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo, props=False)
    assert _init(repo) == 0
    out = capsys.readouterr().out
    [note] = [line for line in out.splitlines() if "judged by the base's tests alone" in line]
    assert note.startswith("note: no properties found: the code (src/billing/, src/quota/)")
    assert "to add properties later, write prop_NAME(seed, n) functions" in note
    assert out.count("to add properties later") == 1  # said once
    text, review_map = _map(repo)
    assert review_map.property is None
    assert review_map.replay.paths == ("src/billing/", "src/quota/")
    assert review_map.replay.seed == 20260924 and review_map.seed == 20260924
    # The comment above the paths says what they mean; the lane to add is in a comment.
    assert "# No property oracle covers this code: a patch to it is judged by the" in text
    assert '#   paths: ["src/billing/", "src/quota/"]' in text
    # The seed is in the map: the next command needs no --seed.
    assert out.splitlines()[-1].endswith("run: patchlane gate --replay local")


def test_json_property_is_null_when_the_lane_is_left_out(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo, props=False)
    assert _init(repo, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["property"] is None
    assert data["replay_paths"] == ["src/billing/", "src/quota/"]
    assert data["left_out"] == []
    assert data["next"] == "patchlane gate --replay local"


@pytest.mark.slow
def test_without_fixtures_the_fixture_lane_is_a_comment(repo: GitRepo) -> None:
    repo.write("src/app/__init__.py", "")
    repo.write("checks/props.py", "def prop_ok(seed, n=200):\n    pass\n")
    repo.commit("project")
    assert _init(repo, "-q") == 0
    text, review_map = _map(repo)
    assert review_map.fixture is None
    assert review_map.property is not None
    assert review_map.property.paths == ("src/app/",)
    assert "# fixture lane left out: no fixture directory was found" in text
    assert sorted(p.name for p in repo.path.rglob("LOCK.json")) == []


def test_refuses_to_overwrite_and_names_the_file(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo)
    (repo.path / "tests/flaky-freeze.yml").write_text("freezes: [] # mine\n")
    assert _init(repo) == 2
    err = capsys.readouterr().err
    assert "tests/flaky-freeze.yml: already exists" in err
    assert "--force" in err
    # Nothing was written: the check happens before the first file.
    assert not (repo.path / "review-map.yml").exists()
    assert not (repo.path / "tests/fixtures/billing/LOCK.json").exists()
    assert (repo.path / "tests/flaky-freeze.yml").read_text() == "freezes: [] # mine\n"


def test_second_run_refuses_then_force_rewrites(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo)
    assert _init(repo, "-q") == 0
    map_path = repo.path / "review-map.yml"
    map_path.write_text("lanes: {}\n")
    assert _init(repo) == 2
    err = capsys.readouterr().err
    assert "review-map.yml" in err and "tests/fixtures/billing/LOCK.json" in err
    assert map_path.read_text() == "lanes: {}\n"
    assert _init(repo, "-q", "--force") == 0
    _, review_map = _map(repo)
    assert review_map.fixture is not None


@pytest.mark.slow
def test_json_lists_what_it_wrote(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    _project(repo, props=True)
    assert _init(repo, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["wrote"] == [
        {"path": "tests/fixtures/billing/LOCK.json", "kind": "fixture lock", "files": 2},
        {"path": "tests/flaky-freeze.yml", "kind": "freeze registry"},
        {"path": "review-map.yml", "kind": "review map"},
    ]
    assert data["property"] == {"paths": ["src/billing/", "src/quota/"], "module": "checks.props"}
    assert data["replay_paths"] == []  # the property lane covers the code
    assert data["fixture_roots"] == ["tests/fixtures/billing/"]
    assert any(".gitignore" in note for note in data["notes"])


def test_no_gitignore_note_when_evidence_is_already_ignored(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo)
    repo.write(".gitignore", "/.patchlane/\n")
    assert _init(repo, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert not any(".gitignore" in note for note in data["notes"])
    # Already ignored: not appended again.
    assert ".gitignore" not in [w["path"] for w in data["wrote"]]
    assert (repo.path / ".gitignore").read_text() == "/.patchlane/\n"


def test_never_writes_through_a_symlink_even_with_force(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo.path / "tests" / "flaky-freeze.yml").symlink_to(elsewhere / "registry.yml")
    assert _init(repo, "--force") == 2
    assert "tests/flaky-freeze.yml: is a symlink" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []
    assert not (repo.path / "review-map.yml").exists()


def test_map_option_names_the_target(repo: GitRepo) -> None:
    _project(repo)
    code = main(
        ["--repo", os.fspath(repo.path), "--map", os.fspath(repo.path / "ci/map.yml"), "-q", "init"]
    )
    assert code == 0
    assert (repo.path / "ci" / "map.yml").is_file()
    assert not (repo.path / "review-map.yml").exists()


def test_outside_a_git_repository_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert main(["--repo", os.fspath(plain), "init"]) == 2
    assert "not inside a git repository" in capsys.readouterr().err


# --- what init writes refuses an unknown key (docs/architecture.md §4) ---------------------


@pytest.mark.parametrize(
    ("after", "indent", "field"),
    [
        ("version:", "", KEY),
        ("lanes:", "  ", f"lanes.{KEY}"),
        # The property lane needs a property module, which init runs once: slow.
        pytest.param("  property:", "    ", f"lanes.property.{KEY}", marks=pytest.mark.slow),
        ("  fixture:", "    ", f"lanes.fixture.{KEY}"),
        ("  freeze:", "    ", f"lanes.freeze.{KEY}"),
        ("  replay:", "    ", f"lanes.replay.{KEY}"),
    ],
    ids=["top", "lanes", "property", "fixture", "freeze", "replay"],
)
def test_the_scaffolded_map_with_an_unknown_key_is_refused_naming_its_line(
    repo: GitRepo, after: str, indent: str, field: str
) -> None:
    _project(repo, props=after == "  property:")
    assert _init(repo, "--json") == 0
    _map(repo)  # as written, it loads
    line = add_yaml_key(repo.path / "review-map.yml", after, indent)
    with pytest.raises(MapError) as info:
        _map(repo)
    assert str(info.value).startswith(f"review-map.yml:{line}: {field}: unknown key")


def test_the_scaffolded_registry_with_an_unknown_key_is_refused_naming_its_line(
    repo: GitRepo,
) -> None:
    _project(repo)
    assert _init(repo, "--json") == 0
    _, review_map = _map(repo)
    path = repo.path / "tests" / "flaky-freeze.yml"
    assert parse_registry(path.read_text("utf-8"), "flaky-freeze.yml", review_map) == ()
    line = add_yaml_key(path, "freezes:", "")
    with pytest.raises(RegistryError) as info:
        parse_registry(path.read_text("utf-8"), "flaky-freeze.yml", review_map)
    assert str(info.value).startswith(f"flaky-freeze.yml:{line}: {KEY}: unknown key")


@pytest.mark.parametrize("at", [(), ("files", 0)], ids=["top", "entry"])
def test_the_scaffolded_lock_with_an_unknown_key_is_exit_2_naming_its_line(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], at: tuple[str | int, ...]
) -> None:
    _project(repo)
    assert _init(repo, "--json") == 0
    path = repo.path / "tests/fixtures/billing/LOCK.json"
    parse_lock(path.read_text("utf-8"), "LOCK.json")  # as written, it parses
    line = add_json_key(path, at)
    field = KEY if at == () else f"files[0].{KEY}"
    with pytest.raises(LockError) as info:
        parse_lock(path.read_text("utf-8"), "LOCK.json")
    assert str(info.value).startswith(f"LOCK.json:{line}: {field}: unknown key")
    capsys.readouterr()
    assert main(["--repo", os.fspath(repo.path), "-q", "fixture", "check"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"LOCK.json:{line}: {field}: unknown key" in err, err
