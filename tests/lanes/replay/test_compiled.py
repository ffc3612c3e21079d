"""The review events compiled code raises, on real patches in real repositories (no child)."""

from __future__ import annotations

import pytest

from patchlane.lanes.replay.compiled import COMPILED_SOURCE, compiled_events, wrote_events
from patchlane.project.build import BuildResult
from patchlane.project.classify import classify
from tests.gitrepo import GitRepo

MAP = """\
version: 1
lanes:
  property:
    paths: ["pkg/"]
    module: "checks.props"
  replay:
    tests: ["tests/"]
{build}"""


def patched(repo: GitRepo, base: dict[str, str], head: dict[str, str], build: bool) -> list[str]:
    line = '    build: "make"\n' if build else ""
    repo.write("review-map.yml", MAP.format(build=line))
    for path, text in base.items():
        repo.write(path, text)
    repo.commit("base")
    repo.branch("agent")
    for path, text in head.items():
        repo.write(path, text)
    repo.commit("patch")
    return list(compiled_events(repo.path, classify(repo.path, "main", "HEAD", None)))


def test_a_c_patch_without_a_build_is_an_event_naming_the_file(repo: GitRepo) -> None:
    events = patched(repo, {"pkg/add.c": "int a;\n"}, {"pkg/add.c": "int b;\n"}, build=False)
    assert len(events) == 1
    assert events[0].startswith(f"{COMPILED_SOURCE} (pkg/add.c); name the command")


def test_with_a_build_a_c_patch_raises_none_and_a_binary_one_still_does(repo: GitRepo) -> None:
    base = {"pkg/add.c": "int a;\n", "pkg/_add.so": "\x7fELF1"}
    events = patched(repo, base, {"pkg/add.c": "int b;\n", "pkg/_add.so": "\x7fELF2"}, build=True)
    assert events == [
        "compiled binary changed (pkg/_add.so): the replay runs the patch's bytes, which no "
        "build from reviewed sources vouches for; a person must look"
    ]


@pytest.mark.parametrize(("compiled", "expected"), [(False, 0), (True, 1)])
def test_build_configuration_counts_in_a_project_with_compiled_code(
    repo: GitRepo, compiled: bool, expected: int
) -> None:
    base = {"pyproject.toml": "[project]\nname = 'x'\n", "pkg/a.py": "x = 1\n"}
    if compiled:
        base["pkg/add.c"] = "int a;\n"
    head = {"pyproject.toml": "[project]\nname = 'y'\n"}
    assert len(patched(repo, base, head, build=False)) == expected


def test_what_the_heads_build_wrote_is_an_event() -> None:
    assert wrote_events(None) == ()
    assert wrote_events(BuildResult("head", True, 0, 0.1, "")) == ()
    (event,) = wrote_events(BuildResult("head", True, 0, 0.1, "", ("conftest.py",)))
    assert event.startswith("the build command wrote 1 file(s) at the head that are not build")
