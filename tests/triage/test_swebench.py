"""swebench-report.json and accepted.jsonl, read back as SWE-bench reads them.

Two readers. The fast tier mirrors SWE-bench's own code: predictions as
``swebench/harness/utils.py`` ``get_predictions_from_file`` reads a ``.jsonl`` (``open(path,
"r")`` in the locale's encoding, ``[json.loads(line) for line in f]``) and as
``run_evaluation.py`` ``main`` keys them (``{pred["instance_id"]: pred ...}``); the report's
keys as ``reporting.py`` ``make_run_report`` writes them (swebench 5.0.2 on PyPI, the same
code as SWE-bench/SWE-bench at 7a21e05772954cc81471ae19d56f436cecf43c54). The slow tier runs
SWE-bench itself: ``get_predictions_from_file`` on our ``accepted.jsonl``, and
``make_run_report`` on the same predictions and tasks, whose keys and counts ours must
agree with. It needs an interpreter with ``swebench`` installed: ``PATCHLANE_SWEBENCH_PYTHON``, else
a venv the test makes once (``pip install swebench==5.0.2``) and keeps in the user's cache.
"""

from __future__ import annotations

import dataclasses
import json
import locale
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from patchlane.errors import InputError, UnsafeWriteError
from patchlane.formats.swebench_report import SwebenchReport
from patchlane.inputs.fields import json_document
from patchlane.inputs.model import from_fields, to_data
from patchlane.schemas import load_schema
from patchlane.triage.summary import Row
from patchlane.triage.swebench import (
    ACCEPTED_NAME,
    NOT_MEASURED,
    REPORT_NAME,
    ROW_KEYS,
    TaskRow,
    read_rows,
    write_swebench,
)
from patchlane.triage.units import Pair, content_key

# make_run_report's keys (swebench 5.0.2, reporting.py; without a docker client).
SWEBENCH_KEYS = (
    "total_instances", "submitted_instances", "completed_instances", "resolved_instances",
    "unresolved_instances", "infra_failure_instances", "ambiguous_failure_instances",
    "empty_patch_instances", "error_instances", "completed_ids", "incomplete_ids",
    "empty_patch_ids", "submitted_ids", "resolved_ids", "unresolved_ids", "infra_failure_ids",
    "ambiguous_failure_ids", "failure_reasons", "error_ids", "schema_version",
)  # fmt: skip
# Patches a prediction may hold that a careless writer or reader would change.
TRICKY = (
    "diff --git a/x.py b/x.py\r\n--- a/x.py\r\n+++ b/x.py\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n",
    "diff --git a/é.py b/é.py\n+s = 'naïve \u2028 \u2029 \x85 \t 😀'\n\\ No newline at end of file",
    "+ends without a newline \x00 \x1b[0m",
)


def pair(instance: str, model: str, patch: str, n: int = 1) -> Pair:
    data = patch.encode("utf-8")
    key = content_key({"instance": instance, "patch": patch})
    return Pair(instance, model, f"{instance}/{model}-{n}", f"preds.jsonl:{n}", data, key)


def row(p: Pair, verdict: str, infra: bool = False, reason: str = "why") -> dict[str, object]:
    """The row the tasks pipeline writes: triage's Row plus the tasks keys."""
    gated = verdict in ("accept_for_review", "undecided", "reject") and not infra
    base = Row(
        name=p.name,
        source=p.source,
        kind="patch",
        head="1" * 40 if gated else None,
        verdict=verdict,
        exit_code={"accept_for_review": 0, "reject": 1, "undecided": 3}.get(verdict, 2),
        reason=reason,
        slice_count=3 if gated else None,
        suite_size=9 if gated else None,
        seconds=1.5,
        evidence=p.name if gated else None,
    ).to_json()
    extra = {
        "instance_id": p.instance_id,
        "model_name_or_path": p.model,
        "key": p.key,
        "infra": infra,
        "attempts": 2 if infra else 1,
        "base_commit": "0" * 40,
        "repo": "https://example.invalid/r.git",
    }
    return {**base, **extra}


def read_predictions_as_swebench(path: Path) -> dict[str, dict[str, object]]:
    """get_predictions_from_file's .jsonl branch, then run_evaluation.main's dict."""
    # SWE-bench: open(predictions_path, "r"), the locale's encoding.
    with path.open(encoding=locale.getpreferredencoding(False)) as f:
        predictions = [json.loads(line) for line in f]
    for pred in predictions:
        assert isinstance(pred, dict) and "instance_id" in pred
    return {pred["instance_id"]: pred for pred in predictions}


def report(out: Path, name: str = REPORT_NAME) -> dict[str, Any]:
    """The report ``name`` in ``out``, checked against its shipped schema."""
    text = (out / name).read_text("utf-8")
    value = json.loads(text)
    jsonschema.validate(value, load_schema("swebench-report"))
    assert isinstance(value, dict)
    # Its model reads it strictly and writes it back key for key.
    read = from_fields(SwebenchReport, json_document(text, name, InputError).fields(value))
    assert json.dumps(to_data(read)) == json.dumps(value)
    return value


def test_accepted_predictions_read_back_exactly_as_given(tmp_path: Path) -> None:
    pairs = [pair(f"org__repo-{i}", "org/model-7b", text, i) for i, text in enumerate(TRICKY)]
    rejected = pair("org__repo-9", "org/model-7b", "+rejected\n", 9)
    written = write_swebench(
        tmp_path, [row(p, "accept_for_review") for p in pairs] + [row(rejected, "reject")],
        [*pairs, rejected],
    )  # fmt: skip
    assert written == [tmp_path / REPORT_NAME, tmp_path / ACCEPTED_NAME]
    data = (tmp_path / ACCEPTED_NAME).read_bytes()
    assert data.isascii()  # the same in every locale SWE-bench's open() may pick
    assert data.count(b"\n") == len(TRICKY) and data.endswith(b"\n")  # no line splits a patch
    got = read_predictions_as_swebench(tmp_path / ACCEPTED_NAME)
    assert got == {
        p.instance_id: {
            "instance_id": p.instance_id,
            "model_name_or_path": "org/model-7b",
            "model_patch": text,
        }
        for p, text in zip(pairs, TRICKY, strict=True)
    }


def test_the_report_has_swebenchs_keys_and_never_claims_resolved(tmp_path: Path) -> None:
    p = pair("a", "m", "+x\n")
    write_swebench(tmp_path, [row(p, "accept_for_review")], [p])
    got = report(tmp_path)
    ours = set(SWEBENCH_KEYS) - set(NOT_MEASURED) - {"schema_version"}
    assert ours <= set(got)
    assert not {k for k in got if "resolved" in k}  # neither resolved_* nor unresolved_*
    assert got["not_measured"] == list(NOT_MEASURED)
    # The same types as SWE-bench's: counts are ints, id lists sorted lists of str.
    for k in ours:
        if k.endswith("_instances"):
            assert type(got[k]) is int
        elif k.endswith("_ids"):
            assert isinstance(got[k], list) and got[k] == sorted(got[k])
    assert got["failure_reasons"] == {}


def test_every_outcome_lands_in_its_list_and_the_tasks_are_partitioned(tmp_path: Path) -> None:
    verdicts = {
        "acc": "accept_for_review",
        "und": "undecided",
        "rej": "reject",
        "dna": "does_not_apply",
        "err": "error",
    }
    pairs = [pair(i, "m", f"+{i}\n") for i in verdicts]
    infra = pair("inf", "m", "+inf\n")
    empty = pair("emp", "m", "")
    # SWE-bench's rule: an empty model_patch is empty, whatever ran (here: nothing did).
    empty_unjudged = pair("emp2", "m", "")
    unjudged = pair("none", "m", "+none\n")
    rows = [row(p, verdicts[p.instance_id]) for p in pairs]
    rows += [row(infra, "undecided", infra=True, reason="infrastructure: worker lost")]
    rows += [row(empty, "empty_patch")]
    tasks = [*verdicts, "inf", "emp", "emp2", "none", "no-prediction"]
    submitted = [*pairs, infra, empty, empty_unjudged, unjudged]
    write_swebench(tmp_path, rows, submitted, tasks)
    got = report(tmp_path)
    assert got["accepted_ids"] == ["acc"]
    assert got["undecided_ids"] == ["und"]  # an infrastructure undecided is not one
    assert got["rejected_ids"] == ["rej"]
    assert got["does_not_apply_ids"] == ["dna"]
    assert got["infra_failure_ids"] == ["inf"]
    assert got["failure_reasons"] == {"inf": "infrastructure: worker lost"}
    assert got["completed_ids"] == ["acc", "rej", "und"]
    # SWE-bench keeps infrastructure failures inside error_ids; a prediction never judged
    # is an error too (SWE-bench: no report.json).
    assert got["error_ids"] == ["dna", "err", "inf", "none"]
    assert got["empty_patch_ids"] == ["emp", "emp2"]
    assert got["incomplete_ids"] == ["no-prediction"]
    assert got["submitted_ids"] == sorted(p.instance_id for p in submitted)
    parts = ("completed_ids", "error_ids", "empty_patch_ids", "incomplete_ids")
    everything = [i for k in parts for i in got[k]]
    assert sorted(everything) == sorted(tasks) and got["total_instances"] == len(tasks)
    for k in ("completed", "error", "empty_patch", "infra_failure", "accepted", "rejected"):
        assert got[f"{k}_instances"] == len(got[f"{k}_ids"])
    assert read_predictions_as_swebench(tmp_path / ACCEPTED_NAME).keys() == {"acc"}


def test_a_retry_that_judged_the_pair_replaces_its_infrastructure_row(tmp_path: Path) -> None:
    p, q = pair("a", "m", "+a\n"), pair("b", "m", "+b\n")
    rows = [
        row(p, "undecided", infra=True),
        row(p, "reject"),  # the rerun judged it
        row(q, "accept_for_review"),
        row(q, "undecided", infra=True),  # a later infra row never erases a verdict
    ]
    write_swebench(tmp_path, rows, [p, q])
    got = report(tmp_path)
    assert (got["rejected_ids"], got["accepted_ids"], got["infra_failure_ids"]) == (
        ["a"],
        ["b"],
        [],
    )


def test_a_row_counts_only_for_the_patch_it_judged(tmp_path: Path) -> None:
    p = pair("a", "m", "+now\n")
    earlier = pair("a", "m", "+an earlier prediction's patch\n")
    other = pair("zzz", "m", "+not in this run\n")
    rows = [row(earlier, "accept_for_review"), row(other, "accept_for_review")]
    write_swebench(tmp_path, rows, [p])
    got = report(tmp_path)
    assert got["accepted_ids"] == [] and got["error_ids"] == ["a"]  # not judged in this run
    assert got["submitted_ids"] == ["a"] and got["total_instances"] == 1
    assert (tmp_path / ACCEPTED_NAME).read_bytes() == b""


def test_one_model_several_candidates_per_instance(tmp_path: Path) -> None:
    first, second = pair("a", "m", "+one\n", 1), pair("a", "m", "+two\n", 2)
    lost, judged = pair("b", "m", "+lost\n", 3), pair("b", "m", "+judged\n", 4)
    rows = [
        row(first, "reject"),
        row(second, "accept_for_review"),
        row(lost, "undecided", infra=True),
        row(judged, "undecided"),
    ]
    third = pair("a", "m", "+three\n", 5)
    write_swebench(
        tmp_path, [*rows, row(third, "accept_for_review")], [first, second, lost, judged, third]
    )
    got = report(tmp_path)
    # An instance counts once, by its best outcome; an infrastructure failure outranks a
    # judged undecided: the lost candidate might still earn accept.
    assert got["accepted_ids"] == ["a"] and got["infra_failure_ids"] == ["b"]
    assert got["undecided_ids"] == [] and got["submitted_instances"] == 2
    preds = read_predictions_as_swebench(tmp_path / ACCEPTED_NAME)
    assert preds["a"]["model_patch"] == "+two\n"  # the first accepted, predictions' order
    assert len((tmp_path / ACCEPTED_NAME).read_text().splitlines()) == 1
    assert got["accepted_not_written"] == [third.name]


def test_several_models_get_a_report_each_and_stale_files_go(tmp_path: Path) -> None:
    a = pair("x", "org/model", "+a\n")
    b = pair("x", "ORG__model", "+b\n")
    c = pair("y", "other", "+c\n")
    (tmp_path / "x").mkdir()  # an instance's evidence folder is never touched
    write_swebench(tmp_path, [row(a, "accept_for_review")], [a])
    assert (tmp_path / REPORT_NAME).is_file()
    rows = [row(a, "accept_for_review"), row(b, "accept_for_review"), row(c, "reject")]
    written = write_swebench(tmp_path, rows, [a, b, c], ["x", "y"])
    names = [p.name for p in written]
    assert names == [
        "swebench-report.org__model.json", "accepted.org__model.jsonl",
        "swebench-report.ORG__model-2.json", "accepted.ORG__model-2.jsonl",
        "swebench-report.other.json", "accepted.other.jsonl",
    ]  # fmt: skip
    assert not (tmp_path / REPORT_NAME).exists() and not (tmp_path / ACCEPTED_NAME).exists()
    for (model, patch), stem in zip(
        [("org/model", "+a\n"), ("ORG__model", "+b\n")], ["org__model", "ORG__model-2"], strict=True
    ):
        got = report(tmp_path, f"swebench-report.{stem}.json")
        assert got["model_name_or_path"] == model and got["accepted_ids"] == ["x"]
        assert got["incomplete_ids"] == ["y"]  # this model gave no prediction for y
        preds = read_predictions_as_swebench(tmp_path / f"accepted.{stem}.jsonl")
        assert preds == {
            "x": {"instance_id": "x", "model_name_or_path": model, "model_patch": patch}
        }
    assert report(tmp_path, "swebench-report.other.json")["rejected_ids"] == ["y"]
    write_swebench(tmp_path, [row(c, "reject")], [c], ["x", "y"])
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [ACCEPTED_NAME, REPORT_NAME, "x"]


def test_a_link_in_place_of_a_file_is_refused_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.py"
    target.write_text("precious\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ACCEPTED_NAME).symlink_to(target)
    p = pair("a", "m", "+a\n")
    with pytest.raises(UnsafeWriteError, match="symbolic link"):
        write_swebench(tmp_path / "out", [row(p, "accept_for_review")], [p])
    assert target.read_text() == "precious\n"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"verdict": "resolved"}, "unknown verdict 'resolved'"),
        ({"infra": 1}, "infra must be true or false"),
        ({"infra": True, "verdict": "accept_for_review"}, "infrastructure failure's verdict"),
        ({"attempts": 0}, "attempts must be a positive integer"),
        ({"attempts": True}, "attempts must be a positive integer"),
        ({"key": "ABC"}, "key must be 64 lowercase hex"),
        ({"instance_id": ""}, "instance_id must be a non-empty string"),
        ({"model_name_or_path": None}, "model_name_or_path must be a non-empty string"),
        ({"resolved": True}, "unknown keys ['resolved']"),
    ],
)
def test_a_malformed_row_is_refused_naming_its_line(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    p = pair("a", "m", "+a\n")
    good = row(p, "reject")
    with pytest.raises(
        InputError, match=f"triage.jsonl:2: not a tasks-run row: .*{re.escape(message)}"
    ):
        write_swebench(tmp_path, [good, {**good, **change}], [p])
    missing = {k: v for k, v in good.items() if k != "repo"}
    with pytest.raises(InputError, match=r"missing keys \['repo'\]"):
        TaskRow.from_json(missing, "f")
    assert not (tmp_path / REPORT_NAME).exists()


def test_read_rows_reads_the_ledger_and_names_a_bad_line(tmp_path: Path) -> None:
    p = pair("a", "m", "+a\n")
    ledger = tmp_path / "triage.jsonl"
    ledger.write_text(
        json.dumps(row(p, "reject")) + "\n\n" + json.dumps(row(p, "undecided", True)) + "\n"
    )
    rows = read_rows(ledger)
    assert [(r.verdict, r.infra, r.attempts) for r in rows] == [
        ("reject", False, 1),
        ("undecided", True, 2),
    ]
    assert set(ROW_KEYS) == set(row(p, "reject"))
    ledger.write_text(json.dumps(row(p, "reject")) + "\n" + '{"name": "a", "name": "b"}\n')
    with pytest.raises(InputError, match=r"triage.jsonl:2: not one JSON object \(duplicate key"):
        read_rows(ledger)
    ledger.write_bytes(b"\xff\n")
    with pytest.raises(InputError, match="not UTF-8"):
        read_rows(ledger)
    with pytest.raises(InputError, match="cannot read"):
        read_rows(tmp_path / "absent.jsonl")


def test_rows_may_be_given_as_task_rows(tmp_path: Path) -> None:
    p = pair("a", "m", "+a\n")
    typed = TaskRow.from_json(row(p, "accept_for_review"), "f")
    write_swebench(tmp_path, [typed], [p])
    assert report(tmp_path)["accepted_ids"] == ["a"]
    assert dataclasses.replace(typed, verdict="reject") != typed


SWEBENCH = "swebench==5.0.2"


def swebench_python() -> str:
    """An interpreter with swebench installed: ``PATCHLANE_SWEBENCH_PYTHON``, else this one
    if it has swebench, else a venv made once with ``pip install swebench==5.0.2`` under
    ``$XDG_CACHE_HOME/patchlane-tests`` (kept for later runs; one maker at a time under a
    lock). Skipped, saying why, only when that install cannot be done (no network)."""
    given = os.environ.get("PATCHLANE_SWEBENCH_PYTHON")
    for found in [given] if given else [sys.executable]:
        if _has_swebench(found):
            return found
    if given:
        pytest.fail(f"PATCHLANE_SWEBENCH_PYTHON={given}: cannot import swebench there")
    import fcntl

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "patchlane-tests"
    cache.mkdir(parents=True, exist_ok=True)
    venv = cache / SWEBENCH.replace("==", "-")
    python = venv / "bin" / "python"
    with (cache / "swebench.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _has_swebench(os.fspath(python)):
            for step in (
                [sys.executable, "-m", "venv", "--clear", os.fspath(venv)],
                [os.fspath(python), "-m", "pip", "install", "-q", SWEBENCH],
            ):
                made = subprocess.run(step, capture_output=True, text=True, check=False)
                if made.returncode != 0:
                    pytest.skip(f"cannot install {SWEBENCH}: {made.stderr.strip()[-300:]}")
    return os.fspath(python)


def _has_swebench(python: str) -> bool:
    probe = [python, "-c", "import swebench.harness.reporting"]
    try:
        return subprocess.run(probe, capture_output=True, check=False).returncode == 0
    except OSError:
        return False


# Runs SWE-bench's own reader on accepted.jsonl and its own make_run_report on the same
# predictions and tasks (no evaluation logs exist: every non-empty one is an error there).
_SWEBENCH_SCRIPT = r"""
import json, sys
from swebench.harness.utils import get_predictions_from_file
from swebench.harness.reporting import make_run_report
accepted, predictions_file, tasks_file, report_dir = sys.argv[1:5]
got = get_predictions_from_file(accepted, "SWE-bench/SWE-bench", "test")
predictions = {p["instance_id"]: p for p in get_predictions_from_file(predictions_file, "x", "test")}
dataset = [{"instance_id": i} for i in json.load(open(tasks_file))]
path = make_run_report(predictions, dataset, "patchlane", None, report_dir)
print(json.dumps({"accepted": got, "report": json.load(open(path))}))
"""


@pytest.mark.slow
def test_swebench_itself_reads_both_files(tmp_path: Path) -> None:
    python = swebench_python()
    pairs = [pair(f"inst-{i}", "org/m", text, i) for i, text in enumerate(TRICKY)]
    empty = pair("inst-empty", "org/m", "", 8)
    pairs += [empty, pair("inst-rej", "org/m", "+r\n", 9)]
    verdicts = ["accept_for_review", "accept_for_review", "undecided", "empty_patch", "reject"]
    tasks = [p.instance_id for p in pairs] + ["inst-without-prediction"]
    out = tmp_path / "out"
    write_swebench(out, [row(p, v) for p, v in zip(pairs, verdicts, strict=True)], pairs, tasks)
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(
        "".join(
            json.dumps({"instance_id": p.instance_id, "model_name_or_path": p.model,
                        "model_patch": p.patch.decode()}) + "\n"
            for p in pairs
        )
    )  # fmt: skip
    (tmp_path / "tasks.json").write_text(json.dumps(tasks))
    done = subprocess.run(
        [python, "-c", _SWEBENCH_SCRIPT, str(out / ACCEPTED_NAME), str(predictions),
         str(tmp_path / "tasks.json"), str(tmp_path / "reports")],
        capture_output=True, text=True, cwd=tmp_path, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["accepted"] == [
        {"instance_id": p.instance_id, "model_name_or_path": "org/m", "model_patch": text}
        for p, text in zip(pairs, TRICKY[:2], strict=False)
    ]
    theirs, ours = result["report"], report(out)
    assert set(theirs) == set(SWEBENCH_KEYS), "swebench's report keys changed: update SWEBENCH_KEYS"
    assert set(theirs) - set(NOT_MEASURED) - {"schema_version"} <= set(ours)
    # What SWE-bench decides without running anything, it decides as we do.
    for k in ("total_instances", "submitted_instances", "empty_patch_instances",
              "incomplete_ids", "empty_patch_ids", "submitted_ids", "ambiguous_failure_ids"):  # fmt: skip
        assert ours[k] == theirs[k], k
    for k in theirs:
        assert type(ours.get(k, theirs[k])) is type(theirs[k]), k
