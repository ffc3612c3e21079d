"""Real Ed25519 key pairs written as PEM files, for the tests that sign receipts."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def write_key_pair(
    directory: Path, name: str = "host", public_suffix: str = ".pub.pem"
) -> tuple[Path, Path]:
    """Write a fresh key pair: PKCS#8 private PEM and SubjectPublicKeyInfo public PEM.

    Returns ``(private, public)`` paths.
    """
    key = Ed25519PrivateKey.generate()
    private, public = directory / f"{name}.pem", directory / f"{name}{public_suffix}"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public
