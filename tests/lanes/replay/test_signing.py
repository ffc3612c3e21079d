"""Ed25519 DSSE-style receipt signatures with real keys (``patchlane.lanes.replay.signing``)."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import replace
from pathlib import Path

import pytest
import rfc8785
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from patchlane.formats.receipt import Receipt, Signature, parse_receipt
from patchlane.lanes.replay import signing
from tests.keys import write_key_pair

HASH = "1" * 64


def a_receipt() -> Receipt:
    return Receipt(
        seed=7,
        slice_sha256=HASH,
        failed_nodeids=("tests/t.py::test_b",),
        skipped_by_freeze=("tests/t.py::test_c",),
        host_role="ci",
        passed_nodeids=("tests/t.py::test_a",),
        head="a" * 40,
        started="2026-09-24T12:00:00Z",
        finished="2026-09-24T12:00:01Z",
        patchlane_version="0.1.0",
    )


def write_keys(directory: Path, name: str = "host") -> tuple[Path, Path]:
    """Write a fresh Ed25519 key pair as PEM files; return ``(private, public)`` paths."""
    return write_key_pair(directory, name)


def test_pae_is_dsse_v1() -> None:
    assert signing.pae("t/x", b"abc") == b"DSSEv1 3 t/x 3 abc"


def test_the_payload_is_rfc8785_of_the_receipt_without_its_signature() -> None:
    key = Ed25519PrivateKey.generate()
    signed = signing.sign(a_receipt(), key)
    assert signing.payload(signed) == rfc8785.dumps(a_receipt().to_json())
    assert signed.signature is not None
    assert signed.signature.payload_type == "application/vnd.patchlane.receipt+json"
    raw = key.public_key().public_bytes_raw()
    assert signed.signature.keyid == hashlib.sha256(raw).hexdigest()
    assert len(base64.b64decode(signed.signature.sig)) == 64


def test_a_signed_receipt_verifies_after_a_round_trip_through_its_file() -> None:
    key = Ed25519PrivateKey.generate()
    signed = signing.sign(a_receipt(), key)
    again = parse_receipt(signed.render(), "receipt.json")
    assert signing.check(again, key.public_key()) is None


@pytest.mark.parametrize(
    "change",
    [
        {"seed": 8},
        {"slice_sha256": "2" * 64},
        {"failed_nodeids": ()},
        {"skipped_by_freeze": ("tests/t.py::test_b", "tests/t.py::test_c")},
        {"host_role": "laptop"},
        {"passed_nodeids": ("tests/t.py::test_a", "tests/t.py::test_b")},
        {"passed_nodeids": None},
        {"head": "b" * 40},
        {"started": "2026-09-24T11:00:00Z"},
        {"finished": "2026-09-24T12:00:02Z"},
        {"patchlane_version": "9.9.9"},
    ],
)
def test_tampering_with_any_field_breaks_verification(change: dict[str, object]) -> None:
    key = Ed25519PrivateKey.generate()
    tampered = replace(signing.sign(a_receipt(), key), **change)  # type: ignore[arg-type]
    assert "does not match" in (signing.check(tampered, key.public_key()) or "")


def test_a_signature_by_another_key_fails() -> None:
    signed = signing.sign(a_receipt(), Ed25519PrivateKey.generate())
    problem = signing.check(signed, Ed25519PrivateKey.generate().public_key())
    assert problem is not None and "another key" in problem


def test_another_key_claiming_the_right_keyid_still_fails() -> None:
    mine, theirs = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    forged = signing.sign(a_receipt(), theirs)
    assert forged.signature is not None
    forged = replace(
        forged,
        signature=replace(forged.signature, keyid=signing.keyid(mine.public_key())),
    )
    assert "does not match" in (signing.check(forged, mine.public_key()) or "")


def test_a_wrong_payload_type_fails() -> None:
    key = Ed25519PrivateKey.generate()
    signed = signing.sign(a_receipt(), key)
    assert signed.signature is not None
    other = replace(signed, signature=replace(signed.signature, payload_type="application/json"))
    assert "payloadType" in (signing.check(other, key.public_key()) or "")


def test_a_signature_over_another_payload_type_fails_even_relabelled() -> None:
    # Signed bytes bind the type: a signature over the same payload under another type is no use.
    key = Ed25519PrivateKey.generate()
    receipt = a_receipt()
    sig = key.sign(signing.pae("application/json", signing.payload(receipt)))
    fake = Signature(
        signing.PAYLOAD_TYPE, signing.keyid(key.public_key()), base64.b64encode(sig).decode()
    )
    assert "does not match" in (
        signing.check(replace(receipt, signature=fake), key.public_key()) or ""
    )


def test_bad_base64_and_no_signature_are_reported() -> None:
    key = Ed25519PrivateKey.generate()
    signed = signing.sign(a_receipt(), key)
    assert signed.signature is not None
    bad = replace(signed, signature=replace(signed.signature, sig="not base64!"))
    assert "base64" in (signing.check(bad, key.public_key()) or "")
    assert "not signed" in (signing.check(a_receipt(), key.public_key()) or "")


def test_key_files_load_and_bad_ones_are_input_errors(tmp_path: Path) -> None:
    private, public = write_keys(tmp_path)
    key = signing.load_private_key(private)
    assert signing.keyid(key.public_key()) == signing.keyid(signing.load_public_key(public))
    with pytest.raises(signing.KeyFileError, match="no such key file"):
        signing.load_private_key(tmp_path / "missing.pem")
    with pytest.raises(signing.KeyFileError, match="public key"):
        signing.load_public_key(private)
    with pytest.raises(signing.KeyFileError, match="private key"):
        signing.load_private_key(public)
    ec = tmp_path / "ec.pem"
    ec.write_bytes(
        generate_private_key(SECP256R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    with pytest.raises(signing.KeyFileError, match="not an Ed25519 key"):
        signing.load_private_key(ec)


def test_the_signing_key_comes_from_the_option_else_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    private, _ = write_keys(tmp_path, "a")
    other, _ = write_keys(tmp_path, "b")
    monkeypatch.delenv(signing.KEY_ENV, raising=False)
    assert signing.configured_private_key(None) is None
    monkeypatch.setenv(signing.KEY_ENV, str(other))
    from_env = signing.configured_private_key(None)
    from_option = signing.configured_private_key(private)
    assert from_env is not None and from_option is not None
    assert signing.keyid(from_env.public_key()) != signing.keyid(from_option.public_key())


# A local replay with no key configured verifies its unsigned receipt in memory; importing
# cryptography for it would only put its import on the way from the last test to the verdict.
_NO_KEY = """
import sys
from patchlane.formats.replay_report import ReplayOutcome
from patchlane.lanes.replay import lane, signing, verify
from patchlane.formats.receipt import Receipt
assert signing.configured_private_key(None) is None
from patchlane.formats import slicefile
slice_bytes = b"t.py::a\\n"
receipt = Receipt(seed=1, slice_sha256=slicefile.sha256(slice_bytes), failed_nodeids=(),
    skipped_by_freeze=(), host_role="local", passed_nodeids=("t.py::a",))
found = verify.verify_receipt(slice_bytes, receipt.render(), None,
    verify.Expectations(seed=1, head=None, require_signature=False, public_key=None, canary=None))
assert found.outcome == ReplayOutcome.PASS, found
print("cryptography" in sys.modules)
"""


def test_an_unsigned_local_receipt_verifies_without_cryptography() -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop(signing.KEY_ENV, None)
    proc = subprocess.run(
        [sys.executable, "-c", _NO_KEY], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_a_key_still_loads_signs_and_checks_with_cryptography_imported_late(
    tmp_path: Path,
) -> None:
    private, public = write_key_pair(tmp_path)
    signed = signing.sign(a_receipt(), signing.load_private_key(private))
    assert signing.check(signed, signing.load_public_key(public)) is None
    assert (
        signing.check(a_receipt(), signing.load_public_key(public)) == "the receipt is not signed"
    )
