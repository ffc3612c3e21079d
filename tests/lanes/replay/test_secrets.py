"""The secret scanner: each rule fires, reports path, line and rule, never the secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchlane.lanes.replay.secrets import Finding, scan_file, scan_text

# Built by concatenation so that this file itself holds no token-shaped string.
SECRETS = {
    "pem-private-key": "-----BEGIN " + "RSA PRIVATE KEY-----",
    "aws-access-key-id": "key = AKIA" + "ABCDEFGHIJKLMNOP",
    "github-token": "gh" + "p_" + "a1B2" * 9,
    "slack-token": "xox" + "b-" + "1234567890-abcdefghij",
    "generic-secret": "API_KEY" + ' = "' + "s3cr3t-v4lue-x9" + '"',
}


@pytest.mark.parametrize("rule", sorted(SECRETS))
def test_each_rule_finds_its_secret_by_line_and_never_quotes_it(rule: str) -> None:
    text = f"harmless = 1\n\n{SECRETS[rule]}\n"
    findings = scan_text("tests/data.txt", text)
    assert findings == [Finding("tests/data.txt", 3, rule)]
    why = findings[0].why()
    assert why == f"secret ({rule}) at line 3"
    assert SECRETS[rule] not in repr(findings[0]) and SECRETS[rule] not in why


@pytest.mark.parametrize(
    "text",
    [
        "-----BEGIN PUBLIC KEY-----",
        "id = AKIA123",  # too short
        "XAKIA" + "ABCDEFGHIJKLMNOP",  # part of a longer word
        "token = 'short'",  # fewer than 12 characters
        "password = os.environ['PASSWORD']",  # not a literal
        "gh" + "p_short",
    ],
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert scan_text("x.py", text) == []


def test_encrypted_and_openssh_keys_are_found() -> None:
    for kind in ("ENCRYPTED ", "OPENSSH ", "EC ", ""):
        assert (
            scan_text("k", "-----BEGIN " + kind + "PRIVATE KEY-----")[0].rule == "pem-private-key"
        )


def test_scan_file_reads_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\xff\xfe\n" + SECRETS["aws-access-key-id"].encode())
    assert scan_file(tmp_path, "blob.bin") == [Finding("blob.bin", 2, "aws-access-key-id")]
    assert scan_file(tmp_path, "missing.txt") == []
