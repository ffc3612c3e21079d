"""The per-user key that seals patchlane's cache entries (docs/architecture.md §2, §4).

A cache entry that changes what a later gate believes (a dependency map, a failed-recording
note, a property result) carries an HMAC-SHA256 of its bytes and its identity (what it is
for, and where it belongs: the base commit, the result's key) under this key. Code that can
write the cache but not read the key cannot make an entry that verifies.

The key lives apart from the cache directory, which a CI cache step may carry between jobs
and machines: ``$PATCHLANE_KEY_DIR``, else ``$XDG_CONFIG_HOME/patchlane``, else
``~/.config/patchlane``; the file ``cache.key`` holds 64 hex digits and a newline. It is made
on first use from ``os.urandom`` (the directory 0700, the file 0600). A key file that exists
but cannot be read, or does not hold exactly such a key, is an error (exit 2), never
replaced: a new key would silently disown every entry, and a key that someone else put
there (a CI secret) is theirs to fix.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from patchlane.errors import InputError

KEY_DIR_ENV = "PATCHLANE_KEY_DIR"
KEY_FILE = "cache.key"
KEY_BYTES = 32
# The MAC's domain: no other HMAC of patchlane's (or anyone's) under this key means the same.
_DOMAIN = b"patchlane-cache-entry-v1\0"
_HEX = frozenset("0123456789abcdef")
_FIX = "delete it and a new key is made on next use (cached entries are then recorded again)"


class CacheKeyError(InputError):
    """The cache key cannot be read or made, or is not a key."""


def key_dir() -> Path:
    """Return the directory of the cache key (see the module docstring): a pure function of
    the environment (``PATCHLANE_KEY_DIR``, ``XDG_CONFIG_HOME``, ``HOME``); it may not exist."""
    if os.environ.get(KEY_DIR_ENV):
        return Path(os.environ[KEY_DIR_ENV])
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg else Path.home() / ".config"
    return base / "patchlane"


@dataclass(frozen=True)
class CacheKey:
    """The secret, and the MACs it makes. ``repr`` never shows it."""

    secret: bytes = field(repr=False)

    def mac(self, purpose: str, identity: str, data: bytes) -> str:
        """Return the hex HMAC-SHA256 of ``data`` as an entry for ``purpose`` (what kind of
        entry) at ``identity`` (where it belongs). Each field is length-prefixed, so no two
        (purpose, identity, data) give the same message."""
        message = bytearray(_DOMAIN)
        for part in (purpose, identity):
            raw = part.encode("utf-8", "surrogateescape")
            message += len(raw).to_bytes(8, "big") + raw
        message += data
        return hmac.new(self.secret, bytes(message), "sha256").hexdigest()

    def verifies(self, purpose: str, identity: str, data: bytes, mac: object) -> bool:
        """Return whether ``mac`` (as read from the cache: anything) is this key's MAC of
        ``data`` for ``purpose`` at ``identity``; compared in constant time."""
        if not isinstance(mac, str) or len(mac) != 64 or not set(mac) <= _HEX:
            return False
        return hmac.compare_digest(mac, self.mac(purpose, identity, data))


def load_or_create_key(cache: Path | None = None) -> CacheKey:
    """Return the user's cache key, making it first when there is none.

    ``cache`` is the cache directory in use: a key inside it would travel with the entries
    it vouches for, so that is refused. Raises ``CacheKeyError`` (exit 2, naming the file)
    when the key file cannot be read, is not 64 hex digits, lies inside ``cache``, or
    cannot be made (or there is no home directory to put it in).
    """
    try:
        directory = key_dir()
    except RuntimeError as e:  # no HOME, and no home directory in the password database
        raise CacheKeyError(KEY_FILE, f"no home directory: set {KEY_DIR_ENV}") from e
    path = directory / KEY_FILE
    if cache is not None and _inside(path, cache):
        raise CacheKeyError(
            os.fspath(path),
            f"the cache key is inside the cache directory {cache}: set {KEY_DIR_ENV} "
            "to a directory outside it",
        )
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    _create(directory, path)
    try:
        return _read(path)
    except FileNotFoundError as e:
        raise CacheKeyError(os.fspath(path), "cannot read the key just made") from e


def _inside(path: Path, folder: Path) -> bool:
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return real == root or real.startswith(root.rstrip("/") + "/")


def _read(path: Path) -> CacheKey:
    """Return the key in ``path``. Raises ``FileNotFoundError`` when there is none, and
    ``CacheKeyError`` when it cannot be read or holds no key."""
    try:
        with path.open("rb") as f:
            data = f.read(1024)
    except FileNotFoundError:
        raise
    except NotADirectoryError as e:
        # A file where a directory of the path should be: there is no key, and making one
        # says why not.
        raise FileNotFoundError(path) from e
    except OSError as e:
        raise CacheKeyError(os.fspath(path), f"cannot read the cache key: {e.strerror}") from e
    text = data.decode("ascii", "replace").strip()
    if len(text) != 2 * KEY_BYTES or not set(text) <= _HEX:
        raise CacheKeyError(
            os.fspath(path), f"not a patchlane cache key ({2 * KEY_BYTES} hex digits): {_FIX}"
        )
    return CacheKey(bytes.fromhex(text))


def _create(directory: Path, path: Path) -> None:
    """Make a new key file at ``path``: a 0600 temp file, written and fsynced, then linked
    to its name, so that of two processes making it at once the first one's key stands
    (a rename would let the second replace a key the first has already sealed with)."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = directory / f".{KEY_FILE}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(KEY_BYTES).hex().encode("ascii") + b"\n")
                f.flush()
                os.fsync(f.fileno())
            with contextlib.suppress(FileExistsError):
                _link(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as e:
        raise CacheKeyError(
            os.fspath(path),
            f"cannot make the cache key: {e.strerror or e}; set {KEY_DIR_ENV} to a writable "
            "directory outside the cache, or turn the caches off "
            "(--dep-map off, --property-cache off)",
        ) from e


def _link(tmp: Path, path: Path) -> None:
    """Give ``tmp`` the name ``path`` unless ``path`` exists (``FileExistsError``)."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:
        # A file system without hard links: a rename, which may replace a key made in the
        # same instant (its entries are then recorded again, nothing worse).
        if path.exists():
            raise FileExistsError(path) from None
        tmp.rename(path)
