"""The property result cache: a run whose inputs (its module, settings, and every file it read,
listed or probed) are unchanged takes its earlier result instead of starting a child; any
change to what it read, any doubt about an entry, and any run whose record cannot be complete
starts a child. An entry whose MAC does not verify under the user's key (issue 19) is not
used, and the lane reports it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from patchlane.formats.property_report import PropertyReport
from patchlane.infra.cachekey import CacheKey
from patchlane.infra.ui import Output
from patchlane.lanes.property.cache import results as resultcache
from patchlane.lanes.property.cache.fingerprint import fingerprint
from patchlane.lanes.property.lane import PropertyRequest, run_property_lane
from patchlane.main import main
from patchlane.project.classify import load_map_file
from tests.gitrepo import GitRepo
from tests.lanes.property import project as P

# Reads a data file next to the code under test (from the head tree, the children's working
# directory) and asks whether an optional one exists, which raises no audit event.
DATA_PROP = """\
import json
import os
from shop import refund


def prop_refund_within_limit(seed, n=20):
    with open("src/shop/limits.json", encoding="utf-8") as f:
        limit = json.load(f)["max_refund"]
    assert limit <= 100, (seed, 0, limit)


def prop_no_override(seed, n=1):
    assert not os.path.exists("src/shop/override.cfg"), (seed, 0, "override present")
"""
LIMITS = '{"max_refund": 50}\n'
# The same size as ``P.SHOP``, and wrong: only the content tells them apart.
SWAPPED_SHOP = P.SHOP.replace("if amount > charge:", "if amount < charge:")


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache directory of this test's own, so that counts do not depend on other tests."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("PATCHLANE_CACHE_DIR", str(cache))
    return cache


def lane(repo: GitRepo, *, cache: bool = True, out: Output | None = None) -> PropertyReport:
    return run_property_lane(
        repo.path,
        load_map_file(repo.path / "review-map.yml"),
        PropertyRequest(seed=P.SEED, cases=P.CASES, mutants=0, result_cache=cache),
        base="main",
        head="HEAD",
        out=out,
    )


def cached(report: PropertyReport) -> dict[str, bool]:
    """Return ``{source: cached}`` of the report's property runs."""
    return {c.source: c.cached for c in report.children if c.mode == "run"}


def counts(report: PropertyReport) -> tuple[int, int, int]:
    assert report.cache is not None
    return report.cache.hits, report.cache.misses, report.cache.stored


def entry_files(cache: Path) -> dict[str, Path]:
    """Return ``{source: entry file}`` of the one module's two runs."""
    found = {}
    for path in (cache / "property").glob("*/*.json"):
        found[json.loads(path.read_text())["description"]["source"]] = path
    return found


def rewrite(path: Path, change: Any, key: CacheKey | None = None) -> None:
    """Apply ``change`` to the entry at ``path`` and seal it again with ``key`` (by default
    the user's: an entry patchlane itself could have written, for the checks beyond the
    MAC; another key is a forger's, or another machine's)."""
    from patchlane.infra.cachekey import load_or_create_key

    entry = json.loads(path.read_text())
    change(entry)
    body = {k: v for k, v in entry.items() if k != "mac"}
    sealer = key or load_or_create_key()
    entry["mac"] = sealer.mac(resultcache.PURPOSE, path.parent.name, resultcache.canonical(body))
    path.write_text(json.dumps(entry))


def old_format(path: Path) -> None:
    """Turn the entry at ``path`` into one of format 2: a bare SHA-256 digest, no MAC (what
    a forger with the format in hand can always make)."""
    entry = json.loads(path.read_text())
    body = {k: v for k, v in entry.items() if k != "mac"}
    body["format"] = 2
    path.write_text(
        json.dumps({**body, "sha256": hashlib.sha256(resultcache.canonical(body)).hexdigest()})
    )


@pytest.mark.slow
def test_a_patch_that_changes_nothing_a_run_read_reuses_its_result(repo: GitRepo) -> None:
    P.make(repo, files={"README.md": "# shop\n"})
    P.patch(repo, {"README.md": "# shop, now with more words\n"})
    first = lane(repo)
    assert counts(first) == (0, 2, 2)
    assert cached(first) == {"base": False, "head": False}
    second = lane(repo)
    assert counts(second) == (2, 0, 0)
    assert cached(second) == {"base": True, "head": True}
    assert P.without_timings(second) == P.without_timings(first)
    # Another patch on the same base that touches nothing the runs read: no child either.
    P.patch(repo, {"README.md": "# shop\n\nA third version.\n"})
    assert counts(lane(repo)) == (2, 0, 0)


@pytest.mark.slow
def test_without_the_cache_every_run_starts_a_child(repo: GitRepo, own_cache: Path) -> None:
    P.make(repo)
    P.patch(repo, {"README.md": "x\n"})
    lane(repo)
    report = lane(repo, cache=False)
    assert report.cache is None
    assert cached(report) == {"base": False, "head": False}
    assert report.to_json()["timings"]["cache"] is None


@pytest.mark.slow
def test_a_patch_changing_code_the_property_imports_is_a_miss(repo: GitRepo) -> None:
    P.make(repo)
    P.patch(repo, {"README.md": "x\n"})
    assert lane(repo).status == "pass"
    P.patch(repo, {"src/shop/__init__.py": SWAPPED_SHOP})  # same size, other bytes
    report = lane(repo)
    assert counts(report) == (0, 2, 2)
    assert report.status == "fail"
    assert P.outcomes(report) == {
        ("prop_refund_bounded", "base"): "fail",
        ("prop_refund_bounded", "head"): "fail",
    }


@pytest.mark.slow
def test_a_patch_changing_a_data_file_a_property_opened_is_a_miss(repo: GitRepo) -> None:
    P.make(repo, props=DATA_PROP, files={"src/shop/limits.json": LIMITS})
    P.patch(repo, {"README.md": "x\n"})
    assert lane(repo).status == "pass"
    assert counts(lane(repo)) == (2, 0, 0)
    P.patch(repo, {"src/shop/limits.json": '{"max_refund": 500}\n'})
    report = lane(repo)
    assert counts(report) == (0, 2, 2)
    failure = P.one_failure(report, "prop_refund_within_limit")
    assert (failure["case_index"], failure["arguments"]) == (0, [500])


@pytest.mark.slow
def test_a_file_a_property_only_asked_about_is_recorded_too(repo: GitRepo) -> None:
    # os.path.exists raises no audit event: the recorder wraps os.stat for it.
    P.make(repo, props=DATA_PROP, files={"src/shop/limits.json": LIMITS})
    P.patch(repo, {"README.md": "x\n"})
    assert lane(repo).status == "pass"
    P.patch(repo, {"src/shop/override.cfg": "on\n"})
    report = lane(repo)
    assert counts(report)[0] == 0
    assert P.outcomes(report)[("prop_no_override", "head")] == "fail"


@pytest.mark.slow
def test_a_failing_result_is_reproduced_exactly(repo: GitRepo) -> None:
    hypothesis_prop = P.SEED_PROP + P.dedent(
        """

        from hypothesis import given, strategies as st


        @given(st.integers(0, 100), st.integers(0, 120))
        def prop_refund_bounded_hypothesis(charge, amount):
            assert 0 <= refund(charge, amount) <= charge
        """
    )
    P.make(repo, props=hypothesis_prop)
    P.patch(repo, {"src/shop/__init__.py": SWAPPED_SHOP})
    first = lane(repo)
    assert first.status == "fail" and counts(first) == (0, 2, 2)
    second = lane(repo)
    assert counts(second) == (2, 0, 0)
    assert P.without_timings(second) == P.without_timings(first)
    failure = P.one_failure(second, "prop_refund_bounded")
    assert failure == P.one_failure(first, "prop_refund_bounded")
    assert failure["case_index"] is not None and failure["arguments"] is not None
    hypothesis = P.one_failure(second, "prop_refund_bounded_hypothesis")
    assert (
        hypothesis["arguments"]
        == P.one_failure(first, "prop_refund_bounded_hypothesis")["arguments"]
    )


def _forge_pass(entry: dict[str, Any]) -> None:
    for record in entry["records"]:
        record.update(outcome="pass", kind=None, case_index=None, arguments=None, message=None)


def _escape(entry: dict[str, Any]) -> None:
    # A path that climbs out of the tree to a file whose fingerprint it carries truly.
    outside = Path(resultcache.__file__)
    climb = "../" * len(outside.parts) + outside.as_posix().lstrip("/")
    fp = fingerprint("open", outside.as_posix(), True)
    _forge_pass(entry)
    entry["manifest"]["tree"] = [["open", "head", climb, fp]]
    entry["manifest"]["outside"] = []


def _old_format(entry: dict[str, Any]) -> None:
    _forge_pass(entry)
    entry["format"] = resultcache.FORMAT + 1


def _unknown_key(entry: dict[str, Any]) -> None:
    # A forged pass with one key more than the format has: the key is not believed, the
    # entry is no entry of this format (a miss, never exit 2: a cache is never input).
    _forge_pass(entry)
    entry["zz_unknown"] = 0


def _unknown_record_key(entry: dict[str, Any]) -> None:
    _forge_pass(entry)
    for record in entry["records"]:
        record["zz_unknown"] = 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tamper", "unverified"),
    [
        pytest.param(lambda p: p.write_text("{not json"), 2, id="malformed"),
        pytest.param(lambda p: p.write_bytes(b""), 2, id="empty"),
        pytest.param(
            lambda p: p.write_text(p.read_text().replace('"fail"', '"pass"')), 2, id="mac"
        ),
        pytest.param(old_format, 2, id="old-format-without-a-mac"),
        # Sealed with the user's key: the checks after the MAC still hold.
        pytest.param(lambda p: rewrite(p, _escape), 0, id="path-out-of-the-tree"),
        pytest.param(lambda p: rewrite(p, _old_format), 0, id="format"),
        pytest.param(lambda p: rewrite(p, _unknown_key), 0, id="unknown-key"),
        pytest.param(lambda p: rewrite(p, _unknown_record_key), 0, id="unknown-record-key"),
        pytest.param(
            lambda p: rewrite(p, lambda e: e["description"].update(seed=P.SEED + 1)),
            0,
            id="other-description",
        ),
    ],
)
def test_a_tampered_entry_is_a_miss(
    repo: GitRepo, own_cache: Path, tamper: Any, unverified: int
) -> None:
    P.make(repo)
    P.patch(repo, {"src/shop/__init__.py": SWAPPED_SHOP})
    assert lane(repo).status == "fail"
    for path in entry_files(own_cache).values():
        tamper(path)
    report = lane(repo)
    assert cached(report) == {"base": False, "head": False}
    assert report.status == "fail"
    assert report.cache is not None and report.cache.unverified == unverified
    assert report.to_json()["timings"]["cache"]["unverified"] == unverified
    # Reported once: an entry that did not verify is removed, the runs stored anew.
    assert counts(lane(repo)) == (2, 0, 0)


@pytest.mark.slow
def test_a_forged_pass_without_the_users_key_is_not_used_and_is_reported(
    repo: GitRepo, own_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A child that can write the cache but not read the key (or a cache restored from
    # another machine) forges a pass for the head's failing run, its manifest intact.
    P.make(repo)
    P.patch(repo, {"src/shop/__init__.py": SWAPPED_SHOP})
    lane(repo)
    head = entry_files(own_cache)["head"]
    rewrite(head, _forge_pass, CacheKey(bytes(32)))
    report = lane(repo, out=Output(verbose=True))
    assert cached(report) == {"base": True, "head": False}
    assert report.status == "fail"
    assert report.cache is not None and report.cache.unverified == 1
    entry = f"property/{head.parent.name[:12]}/{head.name}"
    err = capsys.readouterr().err
    assert f"property: cache entry {entry} did not verify: not used" in err


def test_a_forged_entry_sealed_with_the_users_key_is_a_hit(repo: GitRepo, own_cache: Path) -> None:
    """The limit of the cache's trust (docs/architecture.md §4): it is as trusted as the
    key, which no sandboxed child can read; code that reads it can forge."""
    P.make(repo)
    P.patch(repo, {"src/shop/__init__.py": SWAPPED_SHOP})
    lane(repo)
    rewrite(entry_files(own_cache)["head"], _forge_pass)
    assert cached(lane(repo))["head"] is True


SPAWNS = """\
def prop_spawns(seed, n=1):
    import subprocess
    try:
        subprocess.run(["true"], check=False)
    except Exception:
        pass
"""
SQLITE = """\
def prop_sqlite(seed, n=1):
    import sqlite3
    sqlite3.connect(":memory:").close()
"""
OS_OPEN = """\
import os


def prop_os_open(seed, n=1):
    os.close(os.open("src/shop/__init__.py", os.O_RDONLY))
"""
WRITES = """\
def prop_writes_the_tree(seed, n=1):
    with open("src/shop/notes.txt", "w", encoding="utf-8") as f:
        f.write("x")
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("prop", "why"),
    [
        (SPAWNS, "a property failed in the sandbox"),
        (SQLITE, "its record is incomplete: sqlite3.connect"),
        (OS_OPEN, "its record is incomplete: os.open of a relative path"),
        (WRITES, "wrote /"),
    ],
    ids=["process", "sqlite", "os-open", "writes-the-tree"],
)
def test_a_run_whose_record_cannot_be_complete_is_not_stored(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], prop: str, why: str
) -> None:
    P.make(repo, props=prop)
    P.patch(repo, {"README.md": "x\n"})
    first = lane(repo, out=Output(verbose=True))
    assert counts(first) == (0, 2, 0)
    err = capsys.readouterr().err
    assert f"checks.props (head) not stored: {why}" in err
    assert f"checks.props (base) not stored: {why}" in err
    second = lane(repo)
    assert cached(second) == {"base": False, "head": False}
    assert P.without_timings(second) == P.without_timings(first)


@pytest.mark.slow
def test_a_write_into_the_tree_keeps_every_run_of_the_lane_out(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    # The base's module does not write; the head's does, into the tree both runs read.
    P.make(repo)
    P.patch(repo, {"checks/props.py": P.SEED_PROP + "\n\n" + WRITES})
    assert counts(lane(repo, out=Output(verbose=True))) == (0, 2, 0)
    err = capsys.readouterr().err
    assert "checks.props (base) not stored: another run of the lane wrote " in err


def gate(repo: GitRepo, out: Path, *extra: str) -> int:
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--seed", "20260924"]
    return main([*argv, "--cases", "20", "--out-dir", str(out), *extra])


@pytest.mark.slow
def test_the_gate_counts_runs_from_the_cache(billing: GitRepo, tmp_path: Path) -> None:
    billing.write("src/quota/__init__.py", "LIMIT = 12\n")
    billing.commit("raise the quota")
    out = tmp_path / "ev"

    def runs() -> tuple[float, list[bool]]:
        timings = json.loads((out / "verdict.json").read_text())["timings"]
        report = json.loads((out / "property-report.json").read_text())
        children = [c["cached"] for c in report["timings"]["children"] if c["mode"] == "run"]
        return timings["property lane: runs from the cache"], children

    assert gate(billing, out) == 3
    assert runs() == (0, [False, False])
    assert gate(billing, out) == 3
    assert runs() == (2, [True, True])
    assert gate(billing, out, "--property-cache", "off") == 3
    assert (
        "property lane: runs from the cache"
        not in json.loads((out / "verdict.json").read_text())["timings"]
    )


def test_a_bad_property_cache_setting_is_a_usage_error(
    billing: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATCHLANE_PROPERTY_CACHE", "sometimes")
    assert gate(billing, tmp_path / "ev") == 2


@pytest.mark.parametrize("through_a_link", [False, True], ids=["direct", "through-a-link"])
def test_a_property_cannot_leave_a_result_for_a_later_run(
    repo: GitRepo, own_cache: Path, through_a_link: bool
) -> None:
    # The sandbox blocks writes into the cache's results (and maps): a patch's code that
    # tries fails its own property instead of forging one for the next patch.
    target = own_cache / resultcache.FOLDER
    forges = P.dedent(
        f"""\
        import os
        import tempfile


        def prop_forges(seed, n=1):
            folder = {str(target)!r}
            if {through_a_link!r}:
                os.symlink(folder, os.path.join(tempfile.gettempdir(), "innocent"))
                folder = os.path.join(tempfile.gettempdir(), "innocent")
            try:
                with open(os.path.join(folder, "forged.json"), "w") as f:
                    f.write("{{}}")
            except Exception:
                pass
        """
    )
    P.make(repo)
    P.patch(repo, {"checks/props.py": forges})
    report = lane(repo)
    failure = P.one_failure(report, "prop_forges")
    assert failure["kind"] == "sandbox"
    assert "a write into patchlane's cache" in failure["message"]
    assert not (target / "forged.json").exists()


def test_a_property_cannot_replace_the_cache_key(repo: GitRepo, cache_key: CacheKey) -> None:
    # A key the patch wrote would be one it knows, and every entry it forged would verify.
    from patchlane.infra.cachekey import KEY_FILE, key_dir

    target = key_dir() / KEY_FILE
    replaces = P.dedent(
        f"""\
        def prop_replaces_the_key(seed, n=1):
            try:
                with open({str(target)!r}, "w") as f:
                    f.write("00" * 32 + "\\n")
            except Exception:
                pass
        """
    )
    P.make(repo)
    P.patch(repo, {"checks/props.py": replaces})
    failure = P.one_failure(lane(repo), "prop_replaces_the_key")
    assert failure["kind"] == "sandbox"
    assert bytes.fromhex(target.read_text()) == cache_key.secret
