from __future__ import annotations

import html
import json
import re
import unicodedata
from datetime import date
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from patchlane.formats.fixture_report import FixtureReport, LockUpdate
from patchlane.formats.freeze_report import FreezeReport, RecordResult
from patchlane.formats.property_report import Failure, OracleFinding, PropertyReport
from patchlane.formats.replay_report import ReplayReport
from patchlane.formats.status import Status
from patchlane.formats.verdict_file import Reason, Verdict
from patchlane.gate.reports import LaneReports
from patchlane.gate.review import NOT_REVIEWED, build_note, md_text
from patchlane.main import main
from patchlane.project.classify import ClassificationSummary, ControlChange
from patchlane.schemas import load_schema
from tests.gitrepo import GitRepo
from tests.sample import FIXTURES, LOCK, lock_text

CLASSIFY: dict[str, Any] = {
    "map": {"path": "review-map.yml", "source": "base", "changed_by_patch": False},
    "unmapped": [],
    "control_plane_details": [],
    "map_complete": True,
}
PROPERTY = {
    "lane": "property",
    "status": "pass",
    "reason": "2 properties hold",
    "seed": 20260924,
    "cases": 200,
    "failures": [],
    "oracle_findings": [],
}
FIXTURE = {
    "lane": "fixture",
    "status": "pass",
    "reason": "lock matches",
    "roots": [
        {
            "paths": ["tests/fixtures/billing/"],
            "lock": "tests/fixtures/billing/LOCK.json",
            "files": 2,
            "ok": True,
        }
    ],
    "lock_updates": [],
}
FREEZE = {
    "lane": "freeze",
    "status": "pass",
    "reason": "ok",
    "records": [
        {
            "id": "billing-clock-skew",
            "nodeid": "tests/t.py::test_a",
            "expires": "2026-10-08",
            "in_play": True,
            "ok": True,
            "failed_rules": [],
        },
        {
            "id": "stale",
            "nodeid": "tests/t.py::test_b",
            "expires": "2026-01-01",
            "in_play": False,
            "ok": False,
            "failed_rules": [1, 5],
        },
    ],
}
REPLAY = {
    "lane": "replay",
    "status": "pass",
    "reason": "receipt verified",
    "receipt_sha256": "ab" * 32,
}
VERDICT = {
    "lane": "verdict",
    "status": "pass",
    "verdict": "accept_for_review",
    "reason": "ok",
    "reasons": [{"rule": 7, "lane": "verdict", "effect": "accept_for_review", "message": "ok"}],
}
READERS: dict[str, Any] = {
    "property": PropertyReport,
    "fixture": FixtureReport,
    "freeze": FreezeReport,
    "replay": ReplayReport,
    "classify": ClassificationSummary,
    "verdict": Verdict,
}


def typed(name: str, value: Any) -> Any:
    """``value`` as its strict reader reads it (a typed value or ``None`` stays as it is)."""
    return READERS[name].from_json(value, name) if isinstance(value, dict) else value


def note(**over: Any) -> Any:
    given = {"property": PROPERTY, "fixture": FIXTURE, "freeze": FREEZE, "replay": REPLAY}
    given.update({k: v for k, v in over.items() if k in given})
    reports = LaneReports(**{lane: typed(lane, value) for lane, value in given.items()})
    return build_note(
        typed("classify", over.get("classify", CLASSIFY)),
        reports,
        typed("verdict", over.get("verdict", VERDICT)),
    )


def test_a_complete_note_has_exactly_four_filled_fields() -> None:
    n = note()
    assert n.reviewed
    assert [f.name for f in n.fields] == ["property", "fixture", "freeze", "replay"]
    text = n.to_markdown()
    assert NOT_REVIEWED not in text
    assert "seed 20260924, 200 cases" in text
    assert "tests/fixtures/billing/LOCK.json matches (2 files)" in text
    assert "billing-clock-skew (expires 2026-10-08)" in text
    assert "stale" not in text  # a record not in play skips nothing and is not listed
    assert "ab" * 32 in text
    assert sum(line.startswith("- **") for line in text.splitlines()) == 4


def test_no_freezes_in_play_says_none() -> None:
    n = note(
        freeze={"lane": "freeze", "status": "not_applicable", "reason": "no records", "records": []}
    )
    assert n.fields[2].text == "none"


def test_a_lock_update_shows_its_reason() -> None:
    fixture = dict(
        FIXTURE,
        lock_updates=[{"lock": "tests/fixtures/billing/LOCK.json", "reason": "new invoice layout"}],
    )
    assert "updated: new invoice layout" in note(fixture=fixture).fields[1].text


@pytest.mark.parametrize("lane", ["property", "fixture", "freeze"])
def test_a_missing_report_makes_the_note_say_not_reviewed(lane: str) -> None:
    n = note(**{lane: None})
    assert not n.reviewed
    assert n.to_markdown().splitlines()[2].startswith(f"**{NOT_REVIEWED}**")


def test_code_the_tests_alone_judge_is_named_in_the_property_field_never_blank() -> None:
    # lanes.replay.paths: no property covers the change; the field says what judged it.
    alone = {**CLASSIFY, "tests_alone": ["src/legacy/a.py", "src/legacy/b_c.py"]}
    skipped = {**PROPERTY, "status": "not_applicable", "reason": "no property covers ..."}
    n = note(classify=alone, property=skipped)
    field = n.fields[0]
    assert field.filled
    assert (
        field.text == "none: judged by the base's tests alone (src/legacy/a.py, src/legacy/b_c.py)"
    )
    assert "every property holds" not in field.text
    # Beside properties that ran for the rest of the patch: both are said.
    mixed = note(classify=alone, property=PROPERTY).fields[0]
    assert mixed.text == (
        "seed 20260924, 200 cases: every property holds; for the rest, none: judged by the "
        "base's tests alone (src/legacy/a.py, src/legacy/b_c.py)"
    )
    # Evidence that is missing stays missing: no report is not reviewed, whatever the map.
    assert not note(classify=alone, property=None).fields[0].filled
    # The Markdown escapes the repository's paths; the wording is patchlane's own.
    many = {**CLASSIFY, "tests_alone": [f"src/m{i}.py" for i in range(12)]}
    text = note(classify=many, property=skipped).fields[0].markdown
    assert text.endswith("src/m9.py and 2 more (classify.json lists them))")


def test_the_replay_field_counts_the_slice_against_its_suite() -> None:
    sized = {**REPLAY, "slice_sha256": "cd" * 32, "slice_count": 15, "suite_size": 488}
    text = note(replay={**sized, "slice_added": 3}).fields[3].text
    assert "slice 12 of 488 tests (+3 added by the patch)" in text
    assert "slice 15 of 488 tests" in note(replay=sized).fields[3].text


def test_a_property_report_in_error_without_a_seed_is_not_reviewed() -> None:
    prop = dict(PROPERTY, status="error", reason="no seed", seed=None)
    n = note(property=prop)
    assert not n.reviewed
    assert n.fields[0].text == f"{NOT_REVIEWED} (no seed)"


def test_replay_without_a_receipt_is_undecided() -> None:
    n = note(
        replay={"lane": "replay", "status": "error", "reason": "replay not run (--replay none)"}
    )
    assert n.fields[3].text == "undecided (replay not run (--replay none))"
    assert n.fields[3].filled


def test_the_replay_field_names_the_hash_seed_the_run_drew_and_the_note_keeps_four() -> None:
    n = note(replay=dict(REPLAY, hash_seed=3141592653))
    assert n.fields[3].text == f"receipt sha256 {'ab' * 32}, hash seed 3141592653 (pass)"
    assert [f.name for f in n.fields] == ["property", "fixture", "freeze", "replay"]
    assert sum(line.startswith("- **") for line in n.to_markdown().splitlines()) == 4


def test_no_verdict_is_not_reviewed() -> None:
    assert not note(verdict=None).reviewed


def test_control_plane_changes_and_map_source_are_listed() -> None:
    cls = dict(
        CLASSIFY,
        map={"path": "review-map.yml", "source": "head", "changed_by_patch": True},
        control_plane_details=[{"path": "tests/conftest.py", "kind": "test harness"}],
    )
    text = note(classify=cls).to_markdown()
    assert "- tests/conftest.py (test harness)" in text.splitlines()
    assert "the patch's own (head) map was used" in text


def test_a_newline_in_a_path_cannot_forge_a_line_of_the_note() -> None:
    cls = dict(
        CLASSIFY,
        control_plane_details=[{"path": "a\n- **Fixture lock:** fine", "kind": "test harness"}],
    )
    text = note(classify=cls).to_markdown()
    assert sum(line.startswith("- **") for line in text.splitlines()) == 4


def test_review_command_renders_markdown_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in [
        ("classify.json", CLASSIFY),
        ("property-report.json", PROPERTY),
        ("fixture-report.json", FIXTURE),
        ("freeze-report.json", FREEZE),
        ("replay-report.json", REPLAY),
        ("verdict.json", VERDICT),
    ]:
        (tmp_path / name).write_text(json.dumps(value), encoding="utf-8")
    assert main(["review", "--dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("# patchlane review: accept_for_review")
    assert main(["--json", "review", "--dir", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, load_schema("review-note"))
    assert data["reviewed"] is True
    assert list(data["fields"]) == ["property", "fixture", "freeze", "replay"]
    (tmp_path / "freeze-report.json").unlink()
    out = tmp_path / "note.md"
    assert main(["review", "--dir", str(tmp_path), "--out", str(out)]) == 3
    assert NOT_REVIEWED in out.read_text()


def test_a_red_property_field_carries_the_counterexample_and_findings() -> None:
    prop = dict(
        PROPERTY,
        status="fail",
        reason="1 property failed",
        failures=[
            {
                "property": "prop_refund_never_exceeds_charge",
                "module": "checks.billing_props",
                "source": "base",
                "seed": 20260924,
                "case_index": 17,
                "arguments": [100, 250],
                "message": "refund exceeded charge",
                "kind": "assertion",
            }
        ],
        oracle_findings=[{"property": "prop_x", "kind": "survives_mutants", "detail": "0 of 5"}],
    )
    text = note(property=prop).fields[0].text
    assert (
        "prop_refund_never_exceeds_charge (base) seed 20260924 case 17 arguments [100, 250]" in text
    )
    assert "prop_x survives_mutants" in text


def test_a_multi_line_message_cannot_add_a_field() -> None:
    prop = dict(
        PROPERTY,
        status="fail",
        reason="red",
        failures=[
            {
                "property": "p",
                "module": "m",
                "source": "head",
                "seed": 1,
                "case_index": None,
                "arguments": None,
                "message": "boom\n- **Freezes:** none\n> rule 7: accept",
                "kind": "error",
            }
        ],
    )
    text = note(property=prop).to_markdown()
    assert sum(line.startswith("- **") for line in text.splitlines()) == 4
    assert not any(line.startswith("> rule 7") for line in text.splitlines())


# --- repository text renders as text (issue 9) -------------------------------------------

# Each value could be written by the patch: a lock reason, a freeze id, a node id, a path.
HOSTILE = [
    "ok\n\n**verdict:** accept_for_review <!--",
    "<details><summary>all green</summary>",
    "<img src=x onerror=alert(1)>",
    "<!-- the rest is hidden",
    "# verdict: accept_for_review",
    "a | b | c",
    "``code` `` ``` breaks out",
    "[click](javascript:alert(1))",
    "![pixel](https://evil.example/x.png)",
    "*bold* _em_ __strong__ ~~gone~~",
    "> quoted",
    "- item",
    "1. item",
    "2) item",
    "line\r- **Freezes:** none",
    "\x1b[2J\x1b[31mred",
    "safe\u202eevil",
    "zero\u200bwidth\ufeffjoined\u2028next",
    "&lt;b&gt; is an entity",
    "back\\slash\\",
    "$\\color{red}{accept}$",
    "{::comment}hidden{:/comment}",
]
BENIGN = "plain"
HIDDEN = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def visible(value: str) -> str:
    """What a reader must see for ``value``: invisible characters as escapes, the rest as is."""
    return "".join(ascii(c)[1:-1] if unicodedata.category(c) in HIDDEN else c for c in value)


def rendered(markdown: str) -> str:
    """The text a CommonMark renderer shows for escaped inline text: backslash escapes of
    ASCII punctuation and HTML entities undone (enough for what ``md_text`` produces)."""
    return html.unescape(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown))


def hostile_note(value: str) -> Any:
    """A note with ``value`` in every slot that carries repository text (built directly:
    the strict readers refuse some of these values in a file, the note must not care)."""
    prop = PropertyReport(
        Status.FAIL,
        value,
        seed=1,
        cases=5,
        failures=(Failure(value, "m", "head", 1, 3, [value], value, "assertion"),),
        oracle_findings=(OracleFinding(module="m", property=value, kind=value, detail="detail"),),
    )
    fixture = FixtureReport(Status.FAIL, value, lock_updates=(LockUpdate(value, value),))
    record = RecordResult(value, "t.py::x", "owner", date(2026, 10, 8), (), ("",) * 6)
    freeze = FreezeReport(Status.FAIL, value, records=(record,))
    replay = ReplayReport(
        Status.PASS,
        "ok",
        receipt_sha256="ab" * 32,
        skipped_by_freeze=(value,),
        slice_count=1,
        suite_size=2,
    )
    cls = ClassificationSummary(
        map_complete=True,
        map_reason="ok",
        map_source="base",
        map_changed=False,
        unmapped=(value,),
        control_plane=(ControlChange(value, value, None),),
    )
    verdict = Verdict("reject", (Reason(2, "fixture", "reject", value),))
    return note(
        property=prop, fixture=fixture, freeze=freeze, replay=replay, classify=cls, verdict=verdict
    )


@pytest.mark.parametrize("value", HOSTILE)
def test_repository_text_cannot_forge_the_note(value: str) -> None:
    text = hostile_note(value).to_markdown()
    lines = text.splitlines()
    # The same shape as a note with harmless text in the same places: no line added.
    assert len(lines) == len(hostile_note(BENIGN).to_markdown().splitlines())
    assert sum(line.startswith("- **") for line in lines) == 4
    assert [line for line in lines if line.startswith("#")] == ["# patchlane review: reject"]
    assert not any(line.lstrip().startswith(("**", "<", "1.", "2)")) for line in lines)
    assert "<" not in text  # no tag, comment or autolink of any kind
    for forbidden in ("\r", "\x1b", "\u202e", "\u200b", "\ufeff", "\u2028"):
        assert forbidden not in text
    # Outside patchlane's own "- **Title:**", every character with inline meaning is escaped.
    for line in lines:
        body = re.sub(r"^- \*\*[A-Za-z ]+:\*\* ", "", line)
        body = re.sub(r"\\.", "", body)  # drop escaped pairs, then nothing live may remain
        if not line.startswith("#"):
            assert not set(body) & set("*`[]|~{}$"), line


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_text_stays_readable_in_every_field(value: str) -> None:
    n = hostile_note(value)
    lines = n.to_markdown().splitlines()
    shown = visible(value)
    field_lines = [line for line in lines if line.startswith("- **")]
    assert len(field_lines) == 4
    for line in field_lines:
        assert shown in rendered(line), line
    assert f"- {shown} ({shown})" in [rendered(line) for line in lines]
    assert f"> unmapped: {shown} (extend the map)" in [rendered(line) for line in lines]
    assert f"> rule 2: {shown}" in [rendered(line) for line in lines]


@pytest.mark.parametrize("value", HOSTILE)
def test_the_json_form_keeps_repository_text_raw(value: str) -> None:
    data = hostile_note(value).to_json()
    assert f"lock {value} updated: {value}" in data["fields"]["fixture"]["text"]
    assert f"{value} (expires 2026-10-08)" in data["fields"]["freeze"]["text"]
    assert data["control_plane"] == [{"path": value, "kind": value}]
    assert f"rule 2: {value}" in data["notes"]
    json.loads(json.dumps(data))  # and it is plain JSON


@pytest.mark.parametrize(
    ("value", "markdown"),
    [
        (
            "ok\n\n**verdict:** accept_for_review <!--",
            r"ok\\n\\n\*\*verdict:\*\* accept_for_review &lt;\!--",
        ),
        ("<img src=x>", "&lt;img src=x&gt;"),
        ("[a](javascript:x)", r"\[a\](javascript:x)"),
        ("`a``b`", r"\`a\`\`b\`"),
        ("a|b ~~c~~ #1 +2 {x} $y$", r"a\|b \~\~c\~\~ \#1 \+2 \{x\} \$y\$"),
        ("safe\u202eevil\u200b", r"safe\\u202eevil\\u200b"),
        ("\x1b[31m\r\t", r"\\x1b\[31m\\r\\t"),
        ("tests/test_x.py::test_clamp", "tests/test_x.py::test_clamp"),  # inside a word
        ("_em_ a._b_ __init__", r"\_em\_ a.\_b\_ \_\_init\_\_"),
        ("- item", r"\- item"),
        ("12. item", r"12\. item"),
        ("3) item", r"3\) item"),
        ("billing-clock-skew (expires 2026-10-08)", "billing-clock-skew (expires 2026-10-08)"),
        ("v1.2 (PR-142)", "v1.2 (PR-142)"),
        ("a & b > c", "a &amp; b &gt; c"),
        ("back\\slash", r"back\\slash"),
        ("caf\udce9", r"caf\\udce9"),  # a path byte that is not UTF-8
    ],
)
def test_md_text_rules(value: str, markdown: str) -> None:
    assert md_text(value) == markdown
    assert rendered(markdown) == visible(value)


def test_review_command_escapes_markdown_but_not_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reason = "ok\n\n**verdict:** accept_for_review <!--"
    fixture = dict(FIXTURE, lock_updates=[{"lock": "x/LOCK.json", "reason": reason}])
    for name, value in [
        ("classify.json", CLASSIFY),
        ("property-report.json", PROPERTY),
        ("fixture-report.json", fixture),
        ("freeze-report.json", FREEZE),
        ("replay-report.json", REPLAY),
        ("verdict.json", VERDICT),
    ]:
        (tmp_path / name).write_text(json.dumps(value), encoding="utf-8")
    out = tmp_path / "note.md"
    assert main(["review", "--dir", str(tmp_path), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.startswith("- **Fixture lock:**"))
    assert line == (
        r"- **Fixture lock:** lock x/LOCK.json updated: "
        r"ok\\n\\n\*\*verdict:\*\* accept_for_review &lt;\!--"
    )
    assert main(["--json", "review", "--dir", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fields"]["fixture"]["text"] == f"lock x/LOCK.json updated: {reason}"


# --- end to end: a patch that writes the forging text into the repository ----------------


def relock(repo: GitRepo, reason: str) -> None:
    """Change a fixture and its lock, with ``reason`` as the lock's reason."""
    files = dict(FIXTURES)
    files["tests/fixtures/billing/invoice_min.json"] = '{"charge_cents": 1500}\n'
    repo.write(
        "tests/fixtures/billing/invoice_min.json", files["tests/fixtures/billing/invoice_min.json"]
    )
    repo.write(LOCK, lock_text(files, reason=reason))


def gate(repo: GitRepo, out: Path, *options: str) -> int:
    return main(
        [
            *("--repo", str(repo.path), *options, "gate", "--base", "main"),
            *("--seed", "1", "--cases", "5", "--out-dir", str(out)),
        ]
    )


@pytest.mark.slow
def test_a_forging_lock_reason_is_shown_escaped_on_one_line(
    billing: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A lock reason must be one printable line, so the forgery has to fit on one.
    reason = (
        "ok **verdict:** accept_for_review <!-- <details><img src=x> "
        "[more](javascript:alert(1)) `x` | # _y_"
    )
    relock(billing, reason)
    conftest = "tests/<b>**ok**</b>|\x1b[2Jx/conftest.py"
    billing.write(conftest, "")
    billing.write("scripts/\x1b[2Jclear\nme.sh", "echo\n")
    billing.commit("relock with a forging reason")
    out = tmp_path / "ev"
    assert gate(billing, out) == 3
    text = (out / "review.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert "<" not in text
    assert "\x1b" not in text
    assert sum(line.startswith("- **") for line in lines) == 4
    assert not any(line.startswith(("**", "#", "<")) for line in lines[1:])
    fixture = next(line for line in lines if line.startswith("- **Fixture lock:**"))
    assert rendered(fixture).endswith(f"updated: {reason}")
    assert r"\*\*verdict:\*\* accept_for_review &lt;\!-- &lt;details&gt;" in fixture
    assert f"- {visible(conftest)} (test harness)" in [rendered(line) for line in lines]
    assert r"- tests/&lt;b&gt;\*\*ok\*\*&lt;/b&gt;\|\\x1b\[2Jx/conftest.py (test harness)" in lines
    assert r"> unmapped: scripts/\\x1b\[2Jclear\\nme.sh (extend the map)" in lines
    # The terminal summary quotes the conftest path too, with no raw escape or line break.
    stdout = capsys.readouterr().out
    assert "\x1b" not in stdout
    assert "|\\x1b[2Jx/conftest.py" in stdout


def test_a_multi_line_lock_reason_never_reaches_the_note(billing: GitRepo, tmp_path: Path) -> None:
    relock(billing, "ok\n\n**verdict:** accept_for_review <!--")
    billing.commit("relock with a two-line reason")
    out = tmp_path / "ev"
    assert gate(billing, out, "-q") == 1  # the lock cannot be read safely: red
    text = (out / "review.md").read_text(encoding="utf-8")
    assert "verdict:" not in text
    assert "must be one line" in text
    assert "<" not in text


# --- what the note is about and how it was gated (issue 21) -------------------------------

BASE, MERGE, HEAD = "1" * 40, "2" * 40, "3" * 40
CLASSIFIED = dict(
    CLASSIFY,
    base=BASE,
    head=HEAD,
    merge_base=MERGE,
    files=[
        {"path": "src/billing/core.py", "status": "M", "old_path": None, "lanes": ["property"]},
        {"path": "src/quota/new.py", "status": "R", "old_path": "src/quota/old.py", "lanes": []},
    ],
)
TIMED = dict(
    VERDICT,
    timings={"classify": 0.4, "total": 12.345},
    isolation={"kind": "bwrap", "detail": "bwrap (read-only system)", "required": False},
)


def test_an_accept_note_names_files_commits_wall_time_and_isolation() -> None:
    n = note(classify=CLASSIFIED, verdict=TIMED)
    text = n.to_markdown()
    assert n.reviewed and n.verdict == "accept_for_review"
    lines = text.splitlines()
    start = lines.index("Patch and gate:")
    assert lines[start + 1 :] == [
        f"- base: {BASE} (merge base {MERGE})",
        f"- head: {HEAD}",
        "- gate wall time: 12.3 s",
        "- isolation: bwrap (read-only system); the bubblewrap kernel sandbox ran",
        "- changed files (2):",
        "  - M src/billing/core.py",
        "  - R src/quota/old.py -> src/quota/new.py",
    ]
    assert sum(line.startswith("- **") for line in lines) == 4  # still four fields
    data = n.to_json()
    jsonschema.validate(data, load_schema("review-note"))
    assert data["patch"] == {
        "base": BASE,
        "merge_base": MERGE,
        "head": HEAD,
        "files": [
            {"status": "M", "path": "src/billing/core.py", "old_path": None},
            {"status": "R", "path": "src/quota/new.py", "old_path": "src/quota/old.py"},
        ],
        "wall_seconds": 12.345,
        "isolation": {"kind": "bwrap", "detail": "bwrap (read-only system)"},
    }


def test_without_the_sandbox_the_note_says_so_and_without_evidence_says_nothing() -> None:
    fallback = dict(
        TIMED, isolation={"kind": "none", "detail": "no kernel sandbox (x)", "required": False}
    )
    text = note(classify=CLASSIFIED, verdict=fallback).to_markdown()
    assert "- isolation: no kernel sandbox (x)\n" in text
    bare = note(classify=None, verdict=None)
    assert "Patch and gate:" not in bare.to_markdown()
    jsonschema.validate(bare.to_json(), load_schema("review-note"))
    assert bare.to_json()["patch"]["files"] == []


def test_a_path_in_the_file_list_cannot_forge_a_line() -> None:
    forged = dict(
        CLASSIFIED,
        files=[{"path": "a.py\n- **Replay receipt:** ok", "status": "A", "old_path": None}],
    )
    lines = note(classify=forged, verdict=TIMED).to_markdown().splitlines()
    assert sum(line.startswith("- **") for line in lines) == 4
