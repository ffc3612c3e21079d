"""The lock format: strict parsing with file, line and field in every error."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from patchlane.config import FixtureRoot
from patchlane.errors import LockError
from patchlane.lock import (
    format_updated,
    lenient_reason,
    parse_lock,
    parse_lock_bytes,
    reason_problem,
    render_lock,
)

LABEL = "tests/fixtures/billing/LOCK.json"
ROOT = FixtureRoot(("tests/fixtures/billing/",), LABEL, False)
HASH = "0123456789abcdef" * 4
# The seed's LOCK.json, byte for byte (seed-examples/LOCK.json).
SEED_LOCK = (
    "{\n"
    '  "files": [\n'
    "    {\n"
    '      "path": "tests/fixtures/billing/invoice_min.json",\n'
    '      "sha256": "replace-with-64-hex-chars"\n'
    "    }\n"
    "  ]\n"
    "}\n"
)


def entry(path: str = "tests/fixtures/billing/a.json", sha256: object = HASH) -> dict[str, object]:
    return {"path": path, "sha256": sha256}


def lock_doc(*entries: dict[str, object], **top: object) -> str:
    return json.dumps({"files": list(entries), **top}, indent=2)


def refused(
    text: str, root: FixtureRoot | None = ROOT, locks: tuple[str, ...] = (LABEL,)
) -> LockError:
    with pytest.raises(LockError) as info:
        parse_lock(text, LABEL, root, locks=locks)
    return info.value


def test_the_seed_placeholder_is_refused_naming_the_field_and_line() -> None:
    err = refused(SEED_LOCK)
    assert str(err) == (
        "tests/fixtures/billing/LOCK.json:5: files[0].sha256: "
        "'replace-with-64-hex-chars' is not a SHA-256 (64 hex characters)"
    )
    assert (err.file, err.line) == (LABEL, 5)


def test_the_seed_lock_loads_with_a_real_hash() -> None:
    lock = parse_lock(SEED_LOCK.replace("replace-with-64-hex-chars", HASH), LABEL, ROOT)
    assert lock.expected == {"tests/fixtures/billing/invoice_min.json": HASH}
    assert lock.reason is None and lock.updated is None
    assert [(e.path, e.sha256) for e in lock.files] == [
        ("tests/fixtures/billing/invoice_min.json", HASH)
    ]


def test_upper_case_hex_is_accepted_and_normalised() -> None:
    lock = parse_lock(lock_doc(entry(sha256=HASH.upper())), LABEL, ROOT)
    assert lock.expected["tests/fixtures/billing/a.json"] == HASH


def test_reason_and_updated_are_kept() -> None:
    lock = parse_lock(
        lock_doc(entry(), reason="new invoice", updated="2026-09-24T12:00:00Z"), LABEL, ROOT
    )
    assert (lock.reason, lock.updated) == ("new invoice", "2026-09-24T12:00:00Z")


def test_an_empty_file_list_is_a_valid_lock() -> None:
    assert parse_lock('{"files": []}', LABEL, ROOT).expected == {}


def test_entries_keep_the_file_order() -> None:
    b, a = entry("tests/fixtures/billing/b"), entry("tests/fixtures/billing/a")
    assert list(parse_lock(lock_doc(b, a), LABEL, ROOT).expected) == [
        "tests/fixtures/billing/b",
        "tests/fixtures/billing/a",
    ]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('{"files": [}', 1, "invalid JSON"),
        ('{\n"files": [],\n"files": []\n}', 3, "duplicate key 'files'"),
        ('{"files": [],\n"reason": NaN}', 2, "NaN is not valid JSON"),
        (
            '[{"path": "x", "sha256": "y"}]',
            1,
            "(top level): expected an object with 'files', got a list",
        ),
        (
            '{\n"files": [],\n"extra": 1\n}',
            3,
            "extra: unknown key (expected one of: files, reason, updated)",
        ),
        ('{"reason": "x"}', 1, "files: missing"),
        ('{"files": {}}', 1, "files: expected a list of {path, sha256}, got an object"),
        ('{"files": [],\n"reason": 3}', 2, "reason: expected a one-line string, got a number (3)"),
        ('{"files": [],\n"updated": 3}', 2, "updated: expected a one-line timestamp string"),
        ('{"files": [], "reason": "two\\nlines"}', 1, "reason: must be one line"),
        ('{"files": [], "reason": "carriage\\rreturn"}', 1, "reason: must be one line"),
        ('{"files": [], "reason": "  "}', 1, "reason: must not be empty"),
        ('{"files": [], "reason": "bell\\u0007"}', 1, "reason: must be printable text"),
        (
            '{"files": [\n"a"\n]}',
            2,
            "files[0]: expected an object {path, sha256}, got a string ('a')",
        ),
    ],
)
def test_malformed_documents_name_field_and_line(text: str, line: int | None, message: str) -> None:
    err = refused(text)
    assert message in err.message
    assert err.line == line
    assert err.file == LABEL


@pytest.mark.parametrize(
    ("bad_entry", "field", "message"),
    [
        ({"path": "tests/fixtures/billing/a"}, "files[0].sha256", "missing"),
        ({"sha256": HASH}, "files[0].path", "missing"),
        ({**entry(), "size": 3}, "files[0].size", "unknown key"),
        (entry(path=7), "files[0].path", "expected a repository path, got a number (7)"),  # type: ignore[arg-type]
        (entry(sha256=None), "files[0].sha256", "expected 64 hex characters, got null"),
        (entry(sha256="ab" * 31), "files[0].sha256", "is not a SHA-256 (64 hex characters)"),
        (entry(sha256="zz" * 32), "files[0].sha256", "is not a SHA-256 (64 hex characters)"),
        (entry(sha256=HASH + "\n"), "files[0].sha256", "is not a SHA-256 (64 hex characters)"),
        (entry(path="/etc/passwd"), "files[0].path", "absolute path '/etc/passwd'"),
        (entry(path="tests/fixtures/billing/../../../etc/passwd"), "files[0].path", "'..' in"),
        (entry(path="tests\\fixtures\\billing\\a"), "files[0].path", "backslash"),
        (entry(path="tests/fixtures/billing/dir/"), "files[0].path", "names a directory"),
        (entry(path="tests/fixtures/billing//a"), "files[0].path", "empty or '.' component"),
        (entry(path="tests/fixtures/billing/./a"), "files[0].path", "empty or '.' component"),
        (entry(path=""), "files[0].path", "empty path"),
        (
            entry(path="src/billing/core.py"),
            "files[0].path",
            "is outside this lock's root (tests/fixtures/billing/)",
        ),
        (entry(path="tests/fixtures/billing_v2/a"), "files[0].path", "is outside this lock's root"),
        (entry(path=LABEL), "files[0].path", "is a lock file; lock files are never hashed"),
    ],
)
def test_malformed_entries_name_field_and_line(
    bad_entry: dict[str, object], field: str, message: str
) -> None:
    text = lock_doc(bad_entry)
    err = refused(text)
    assert err.message.startswith(f"{field}: ")
    assert message in err.message
    # The entry starts on line 3 of the indented document; its fields on lines 4 to 6.
    assert err.line is not None and 3 <= err.line <= 6


def test_a_path_listed_twice_is_refused_with_both_places() -> None:
    err = refused(lock_doc(entry(), entry("tests/fixtures/billing/b"), entry()))
    assert (
        err.message
        == "files[2].path: 'tests/fixtures/billing/a.json' is listed twice (first at files[0])"
    )
    assert err.line == 12


def test_an_unusual_but_safe_path_takes_the_careful_path_and_loads() -> None:
    dotted = "tests/fixtures/billing/.hidden/v1.2..json"
    assert parse_lock(lock_doc(entry(dotted)), LABEL, ROOT).expected == {dotted: HASH}


def test_a_root_given_as_one_file_covers_exactly_that_file() -> None:
    root = FixtureRoot(("data/one.json",), "data/LOCK.json", False)
    assert parse_lock(lock_doc(entry("data/one.json")), "data/LOCK.json", root).expected
    with pytest.raises(LockError, match="outside this lock's root"):
        parse_lock(lock_doc(entry("data/one.json.bak")), "data/LOCK.json", root)


def test_without_a_root_only_syntax_and_safety_are_checked() -> None:
    assert parse_lock(lock_doc(entry("anywhere/x")), LABEL).expected == {"anywhere/x": HASH}
    with pytest.raises(LockError, match="absolute path"):
        parse_lock(lock_doc(entry("/x")), LABEL)


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(LockError, match=r"not UTF-8 \(byte 14\)"):
        parse_lock_bytes(b'{"files": [],"\xff": 1}', LABEL, ROOT)


def test_a_non_utf8_path_survives_as_its_surrogate_escape() -> None:
    path = "tests/fixtures/billing/caf\udce9.bin"
    text = render_lock({path: HASH}, "bytes", "2026-09-24T12:00:00Z")
    assert "\\udce9" not in text  # the surrogate is escaped only when encoded for writing
    data = text.encode("utf-8", "backslashreplace")
    assert b"caf\\udce9.bin" in data
    assert parse_lock_bytes(data, LABEL, ROOT).expected == {path: HASH}


def test_render_lock_is_sorted_indented_and_loads_back() -> None:
    files = {"tests/fixtures/billing/b": HASH, "tests/fixtures/billing/a": "f" * 64}
    text = render_lock(files, "new fixtures", "2026-09-24T12:00:00Z")
    assert text.endswith("}\n") and text.count("\n  ") > 0
    doc = json.loads(text)
    assert list(doc) == ["reason", "updated", "files"]
    assert [f["path"] for f in doc["files"]] == [
        "tests/fixtures/billing/a",
        "tests/fixtures/billing/b",
    ]
    lock = parse_lock(text, LABEL, ROOT)
    assert lock.expected == files and lock.reason == "new fixtures"


def test_format_updated_is_utc_seconds_with_z() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert (
        format_updated(datetime(2026, 9, 24, 14, 0, 5, 999, tzinfo=plus_two))
        == "2026-09-24T12:00:05Z"
    )
    assert format_updated(datetime(2026, 9, 24, 12, 0, 5)) == "2026-09-24T12:00:05Z"
    now = format_updated()
    assert len(now) == 20 and now.endswith("Z")
    assert abs(
        datetime.strptime(now, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) - datetime.now(UTC)
    ) < timedelta(minutes=5)


@pytest.mark.parametrize(
    ("reason", "ok"),
    [
        ("fixture regenerated for 2026 tax rules", True),
        ("", False),
        (" ", False),
        ("a\nb", False),
        ("a\u2028b", False),
        ("tab\there", False),
    ],
)
def test_reason_problem(reason: str, ok: bool) -> None:
    assert (reason_problem(reason) is None) == ok


def test_lenient_reason_reads_what_it_can() -> None:
    assert lenient_reason(b'{"files": [], "reason": "old"}') == "old"
    assert lenient_reason(b'{"files": 3, "reason": "still read"}') == "still read"
    assert lenient_reason(b"not json") is None
    assert lenient_reason(b'{"reason": 3}') is None
    assert lenient_reason(b"[]") is None
    assert lenient_reason(b"\xff") is None
