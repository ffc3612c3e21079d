"""The failure log: pytest JUnit XML and pytest's text summary, read from real files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from patchlane.errors import InputError
from patchlane.lanes.freeze import read_failure_log
from patchlane.lanes.freeze.failure_log import junit_nodeid, parse_text

TESTS = """\
import pytest


class TestClock:
    class TestInner:
        def test_nested(self):
            assert 0

    def test_skew(self):
        assert 0


@pytest.mark.parametrize("x", ["a - b", "c]d", "ok"])
def test_param(x):
    assert x == "ok"


def test_passes():
    pass


@pytest.fixture
def boom():
    raise RuntimeError("setup")


def test_setup_error(boom):
    pass
"""
FAILED = {
    "tests/sub/test_clock.py::TestClock::TestInner::test_nested",
    "tests/sub/test_clock.py::TestClock::test_skew",
    "tests/sub/test_clock.py::test_param[a - b]",
    "tests/sub/test_clock.py::test_param[c]d]",
    "tests/sub/test_clock.py::test_setup_error",
}


@pytest.fixture(scope="module")
def pytest_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run real pytest once on a small suite, writing JUnit XML (both families) and text."""
    root = tmp_path_factory.mktemp("suite")
    (root / "tests" / "sub").mkdir(parents=True)
    (root / "tests" / "sub" / "test_clock.py").write_text(TESTS)
    for name, extra in (("xunit2.xml", []), ("xunit1.xml", ["-o", "junit_family=xunit1"])):
        with (root / "out.txt").open("w") as out:
            subprocess.run(
                [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:patchlane", "-q", "-rfE",
                 f"--junitxml={root / name}", *extra, "tests"],
                cwd=root, stdout=out, stderr=subprocess.STDOUT, check=False,
            )  # fmt: skip
    return root


@pytest.mark.slow
@pytest.mark.xdist_group("failure-log-pytest-run")  # one ``pytest_run``, on one worker
@pytest.mark.parametrize("name", ["xunit2.xml", "xunit1.xml", "out.txt"])
def test_real_pytest_output_gives_exactly_the_failed_and_errored_node_ids(
    pytest_run: Path, name: str
) -> None:
    assert read_failure_log(pytest_run / name) == FAILED


def test_text_summary_lines_and_only_those() -> None:
    text = (
        "tests/a.py::test_x FAILED  [ 50%]\n"  # a progress line is not the summary
        "FAILED tests/a.py::test_y - AssertionError: [1] - 2\n"
        "ERROR tests/b.py::test_z\r\n"
        "\x1b[31mFAILED\x1b[0m tests/c.py::test_colour - boom\n"
        "ERROR tests/d.py - ImportError: collection\n"
        "ERROR: file or directory not found: nowhere\n"
        "PASSED tests/a.py::test_w\n"
        "FAILED not a node id\n"
    )
    assert parse_text(text) == {
        "tests/a.py::test_y",
        "tests/b.py::test_z",
        "tests/c.py::test_colour",
        "tests/d.py",
    }


@pytest.mark.parametrize(
    ("classname", "name", "file", "expected"),
    [
        ("tests.test_billing", "test_y", None, "tests/test_billing.py::test_y"),
        ("tests.test_billing.TestC", "test_y", None, "tests/test_billing.py::TestC::test_y"),
        ("tests.test_billing.TestC", "test_y[1-2]", "tests/test_billing.py", "tests/test_billing.py::TestC::test_y[1-2]"),
        ("tests.Weird.test_b", "test_y", "tests/Weird/test_b.py", "tests/Weird/test_b.py::test_y"),
        ("", "tests.test_billing", None, None),
        ("tests.test_billing", "", None, None),
    ],
)  # fmt: skip
def test_junit_classname_to_node_id(
    classname: str, name: str, file: str | None, expected: str | None
) -> None:
    assert junit_nodeid(classname, name, file) == expected


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "log"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.test_billing" name="test_invoice_timestamp_order"><failure message="x"/></testcase>
<testcase classname="tests.test_billing" name="test_ok"/>
<testcase classname="tests.test_billing" name="test_skipped"><skipped message="s"/></testcase>
<testcase classname="tests.test_billing" name="test_err"><error message="e"/></testcase>
</testsuite></testsuites>
"""


def test_only_failure_and_error_children_count(tmp_path: Path) -> None:
    assert read_failure_log(write(tmp_path, JUNIT)) == {
        "tests/test_billing.py::test_invoice_timestamp_order",
        "tests/test_billing.py::test_err",
    }
    bare = '<testsuite><testcase classname="tests.t" name="test_a"><error/></testcase></testsuite>'
    assert read_failure_log(write(tmp_path, "\ufeff  " + bare)) == {"tests/t.py::test_a"}


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ('<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">]>\n<testsuites/>', "<!DOCTYPE is refused", 2),
        ('<?xml version="1.0"?>\n<!doctype testsuites SYSTEM "file:///etc/passwd">\n<testsuites/>', "<!DOCTYPE is refused", 2),
        ("<testsuites>\n<!ENTITY x 'y'>\n</testsuites>", "<!ENTITY is refused", 2),
        ("<testsuites>\n<testcase>\n</testsuites>", "not well-formed XML", 3),
        ("<html><body/></html>", "not JUnit XML (the root is <html>)", 1),
        (b"<\x00t\x00e\x00s\x00t\x00/\x00>\x00", "a NUL byte is refused", None),
        (b"FAILED tests/x.py::test_\xff\n", "not UTF-8", 1),
    ],
    ids=["doctype-entity", "doctype-system", "entity", "malformed", "not-junit", "utf16", "latin1"],
)  # fmt: skip
def test_unsafe_or_unparseable_logs_are_refused_naming_the_file(
    tmp_path: Path, text: str | bytes, message: str, line: int | None
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        read_failure_log(path)
    assert info.value.file == str(path)
    assert message in info.value.message
    assert info.value.line == line


def test_a_missing_log_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_failure_log(tmp_path / "nope.xml")


def test_an_empty_or_clean_log_names_nothing(tmp_path: Path) -> None:
    assert read_failure_log(write(tmp_path, "")) == frozenset()
    assert read_failure_log(write(tmp_path, "5 passed in 0.1s\n")) == frozenset()
