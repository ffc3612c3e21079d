"""The workflow-command rules of ``patchlane.ci.workflow`` and the step's exit code, on
their own: GitHub's escaping of annotation data and properties, ``$GITHUB_OUTPUT``'s two
forms, and which exit code wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchlane.ci.github import final_code
from patchlane.ci.workflow import Annotation, append_env_file, output_entry
from tests.ci.test_github import outputs


def test_annotation_data_and_properties_are_escaped_by_githubs_rules() -> None:
    note = Annotation(
        "warning",
        "50% done\r\nnext::step, then: more",
        title="a: b, c",
        file="tests/a,b:c.py",
        line=3,
    )
    assert note.command() == (
        "::warning file=tests/a%2Cb%3Ac.py,line=3,title=a%3A b%2C c::"
        "50%25 done%0D%0Anext::step, then: more"
    )
    assert Annotation("error", "x", line=3).command() == "::error::x"  # no line without a file
    # An escape sequence in quoted text cannot recolour or hide the log around it.
    assert Annotation("notice", "\x1b[2Kgone\udce9").command() == "::notice::\\x1b[2Kgone\\udce9"


def test_an_output_with_a_line_break_uses_the_delimited_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert output_entry("verdict", "reject") == "verdict=reject\n"
    entry = output_entry("reason", "first\nverdict=accept_for_review")
    name, delimiter = entry.split("\n", 1)[0].split("<<")
    assert name == "reason" and delimiter.startswith("ghadelimiter_")
    assert outputs(entry + output_entry("verdict", "reject")) == {
        "reason": "first\nverdict=accept_for_review",
        "verdict": "reject",
    }
    target = tmp_path / "out"
    monkeypatch.delenv("PATCHLANE_TEST_OUT", raising=False)
    assert append_env_file("PATCHLANE_TEST_OUT", "x=1\n") is False  # outside GitHub Actions
    monkeypatch.setenv("PATCHLANE_TEST_OUT", str(target))
    assert append_env_file("PATCHLANE_TEST_OUT", "x=1\n") is True
    assert append_env_file("PATCHLANE_TEST_OUT", "y=2\n") is True
    assert target.read_text() == "x=1\ny=2\n"


def test_the_step_code_follows_the_gate_and_the_evidence() -> None:
    assert [final_code(None, v) for v in (0, 1, 3, None)] == [0, 1, 3, 2]
    assert [final_code(g, 0) for g in (1, 2, 3, 4)] == [1, 2, 3, 4]
    assert [final_code(0, v) for v in (0, 1, 3, None)] == [0, 2, 2, 2]
