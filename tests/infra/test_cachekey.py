"""The per-user cache key (issue 19): where it lives, how it is made on first use, what a bad
key file does, and what its MACs bind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from patchlane.infra.cachekey import (
    KEY_DIR_ENV,
    KEY_FILE,
    CacheKey,
    CacheKeyError,
    key_dir,
    load_or_create_key,
)
from patchlane.main import main
from tests.formats.test_depmap import MAP
from tests.gitrepo import GitRepo


@pytest.fixture
def keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A key directory of this test's own (not made yet)."""
    directory = tmp_path / "config" / "patchlane"
    monkeypatch.setenv(KEY_DIR_ENV, str(directory))
    return directory


def test_the_key_dir_comes_from_the_environment_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_DIR_ENV, str(tmp_path / "keys"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert key_dir() == tmp_path / "keys"
    monkeypatch.delenv(KEY_DIR_ENV)
    assert key_dir() == tmp_path / "xdg" / "patchlane"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert key_dir() == tmp_path / "home" / ".config" / "patchlane"


def test_a_missing_key_is_made_private_once_and_then_kept(keys: Path) -> None:
    first = load_or_create_key()
    path = keys / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(keys.stat().st_mode) == 0o700
    text = path.read_text(encoding="ascii")
    assert len(text) == 65 and text.endswith("\n") and bytes.fromhex(text) == first.secret
    assert load_or_create_key() == first
    assert [p.name for p in keys.iterdir()] == [KEY_FILE]  # no temp file left behind
    assert first.secret.hex() not in repr(first)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", r"not a patchlane cache key \(64 hex digits\): delete it"),
        (b"not a key\n", "not a patchlane cache key"),
        (b"ab" * 31 + b"\n", "not a patchlane cache key"),
        (b"AB" * 32 + b"\n", "not a patchlane cache key"),
    ],
    ids=["empty", "text", "short", "upper-case"],
)
def test_a_key_file_that_holds_no_key_is_an_error_and_is_left_alone(
    keys: Path, content: bytes, message: str
) -> None:
    keys.mkdir(parents=True)
    (keys / KEY_FILE).write_bytes(content)
    with pytest.raises(CacheKeyError, match=message) as caught:
        load_or_create_key()
    assert caught.value.file == os.fspath(keys / KEY_FILE)
    assert (keys / KEY_FILE).read_bytes() == content


def test_a_key_file_that_cannot_be_read_is_an_error(keys: Path) -> None:
    (keys / KEY_FILE).mkdir(parents=True)
    with pytest.raises(CacheKeyError, match="cannot read the cache key: Is a directory"):
        load_or_create_key()


def test_a_key_that_cannot_be_made_is_an_error_that_says_what_to_do(keys: Path) -> None:
    keys.parent.mkdir(parents=True)
    keys.write_text("a file where the directory should be\n")
    with pytest.raises(CacheKeyError, match=f"cannot make the cache key: .*set {KEY_DIR_ENV}"):
        load_or_create_key()


def test_a_key_inside_the_cache_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(KEY_DIR_ENV, str(cache / "key"))
    with pytest.raises(CacheKeyError, match="inside the cache directory"):
        load_or_create_key(cache)
    assert not (cache / "key").exists()
    assert load_or_create_key(tmp_path / "elsewhere").secret  # any other cache is fine


def test_a_mac_binds_the_purpose_the_identity_and_the_bytes() -> None:
    key, other = CacheKey(b"k" * 32), CacheKey(b"o" * 32)
    mac = key.mac("dependency-map", "a" * 40, b"{}")
    assert key.verifies("dependency-map", "a" * 40, b"{}", mac)
    assert not other.verifies("dependency-map", "a" * 40, b"{}", mac)
    assert not key.verifies("property-result", "a" * 40, b"{}", mac)
    assert not key.verifies("dependency-map", "b" * 40, b"{}", mac)
    assert not key.verifies("dependency-map", "a" * 40, b"{} ", mac)
    # The fields are length-prefixed: moving a byte from one field to the next changes it.
    assert key.mac("ab", "c", b"") != key.mac("a", "bc", b"")
    assert not key.verifies("dependency-map", "a" * 40, b"{}", mac.upper())
    assert not key.verifies("dependency-map", "a" * 40, b"{}", None)


def test_a_gate_with_a_bad_key_exits_2_naming_the_file(
    repo: GitRepo, keys: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("review-map.yml", MAP)
    repo.write("tests/test_ok.py", "def test_ok():\n    assert True\n")
    base = repo.commit("a suite")
    keys.mkdir(parents=True)
    (keys / KEY_FILE).write_text("garbage\n")
    argv = ["--repo", str(repo.path), "-q", "replay", "map", "--base", base]
    assert main([*argv, "--dep-cache", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and os.fspath(keys / KEY_FILE) in err[0]
    assert "not a patchlane cache key" in err[0]
