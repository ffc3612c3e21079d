"""Ed25519 receipt signatures, DSSE-style (the pre-authentication encoding of DSSE v1).

The signed bytes are ``PAE(payloadType, payload)`` where the payload is the RFC 8785 canonical
JSON of the receipt without its ``signature``: canonical, so that a receipt re-indented or with
its keys reordered still verifies, and any change to a value does not. Binding the payload type
into the signed bytes means a signature over some other kind of document can never be passed
off as a receipt's. The verifier holds only the public key; ``keyid`` is the sha256 of the raw
public key, so "signed by another key" is told apart from "tampered with".
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import rfc8785

from patchlane.infra.sandbox import hide_file

if TYPE_CHECKING:
    # Imported where a key is read or used: a local run with no key configured never
    # needs cryptography, and its import is on the way from the last test to the verdict.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

from patchlane.errors import InputError
from patchlane.formats.receipt import Receipt, Signature

PAYLOAD_TYPE = "application/vnd.patchlane.receipt+json"
KEY_ENV = "PATCHLANE_SIGNING_KEY"


class KeyFileError(InputError):
    """A key file cannot be read or is not an Ed25519 key in PEM form (exit 2)."""


def pae(payload_type: str, payload: bytes) -> bytes:
    """Return DSSE v1's pre-authentication encoding of ``payload`` (lengths in ASCII decimal)."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def payload(receipt: Receipt) -> bytes:
    """Return the bytes a signature covers: RFC 8785 JSON of the receipt without ``signature``."""
    return rfc8785.dumps(receipt.to_json(signature=False))


def keyid(public_key: Ed25519PublicKey) -> str:
    """Return the key id: the sha256 hex digest of the 32 raw public key bytes."""
    from cryptography.hazmat.primitives import serialization

    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def sign(receipt: Receipt, key: Ed25519PrivateKey) -> Receipt:
    """Return ``receipt`` with a fresh signature by ``key`` (any old signature is replaced)."""
    sig = key.sign(pae(PAYLOAD_TYPE, payload(receipt)))
    signature = Signature(
        payload_type=PAYLOAD_TYPE,
        keyid=keyid(key.public_key()),
        sig=base64.b64encode(sig).decode("ascii"),
    )
    return replace(receipt, signature=signature)


def check(receipt: Receipt, public_key: Ed25519PublicKey) -> str | None:
    """Check the receipt's signature against ``public_key``.

    Returns ``None`` when it verifies, else one line saying why not (no signature, another
    payload type, another key, malformed base64, or a signature that does not match the
    receipt's contents).
    """
    signature = receipt.signature
    if signature is None:
        return "the receipt is not signed"
    if signature.payload_type != PAYLOAD_TYPE:
        return f"signature payloadType is {signature.payload_type!r}, not {PAYLOAD_TYPE!r}"
    expected = keyid(public_key)
    if signature.keyid != expected:
        return f"signed by another key (keyid {signature.keyid[:16]}…, expected {expected[:16]}…)"
    try:
        raw = base64.b64decode(signature.sig.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        return "signature 'sig' is not valid base64"
    from cryptography.exceptions import InvalidSignature

    try:
        public_key.verify(raw, pae(PAYLOAD_TYPE, payload(receipt)))
    except InvalidSignature:
        return (
            "the signature does not match the receipt (tampered with, or signed over other bytes)"
        )
    return None


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise KeyFileError(os.fspath(path), "no such key file") from None
    except OSError as e:
        raise KeyFileError(os.fspath(path), f"cannot read: {e.strerror or e}") from None


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """Read an unencrypted Ed25519 private key (PEM, PKCS#8), and hide its file from every
    sandboxed child started from now on (a test could read it and leak it through its node
    ids). Raises ``KeyFileError``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    hide_file(path)
    try:
        key = serialization.load_pem_private_key(_read(path), password=None)
    except (ValueError, TypeError) as e:
        raise KeyFileError(
            os.fspath(path), f"not an unencrypted PEM private key ({one(e)})"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(os.fspath(path), f"not an Ed25519 key ({type(key).__name__})")
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    """Read an Ed25519 public key (PEM, SubjectPublicKeyInfo). Raises ``KeyFileError``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = serialization.load_pem_public_key(_read(path))
    except (ValueError, TypeError) as e:
        raise KeyFileError(os.fspath(path), f"not a PEM public key ({one(e)})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(os.fspath(path), f"not an Ed25519 key ({type(key).__name__})")
    return key


def configured_private_key(option: Path | None) -> Ed25519PrivateKey | None:
    """Return the signing key: ``--signing-key``, else the file named by ``$PATCHLANE_SIGNING_KEY``,
    else ``None`` (unsigned). Raises ``KeyFileError`` for a named file that is not a usable key."""
    if option is not None:
        return load_private_key(option)
    named = os.environ.get(KEY_ENV)
    if named:
        return load_private_key(Path(named))
    return None


def one(error: Exception) -> str:
    """The first line of an error's message (cryptography's can span several)."""
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
