"""Narrowings the dependency map promises (docs/how-to/dependency-map.md) on the shapes of
real projects' commits (issue 31), with real recordings on real git repositories."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from patchlane.lanes.replay import maprecord
from patchlane.lanes.replay.mapselect import changed_docstrings, changed_functions, module_level_why
from tests.formats.test_depmap import MAP, REVIEW_MAP, _select
from tests.gitrepo import GitRepo, run_patchlane

# sqlparse f66d12c: NameAliasMixin.get_real_name has a docstring, then a comment, then its
# code; the fix rewrites the comment and the code. The package re-exports its modules, so
# the module-level rule would select every test.
SQL = '''\
class NameAliasMixin:
    """Names and aliases."""

    def get_real_name(self):
        """Returns the real name (object name) of this identifier."""
        # a.b
        dot = self.text.find(".")
        return self.text[dot + 1 :]

    def get_alias(self):
        return None


class Identifier(NameAliasMixin):
    def __init__(self, text):
        self.text = text
'''
SQL_HEAD = SQL.replace(
    '        # a.b\n        dot = self.text.find(".")\n',
    '        # a.b.c -> the component after the *last* dot\n        dot = self.text.rfind(".")\n',
)
SQLPARSE = {
    "pkg/__init__.py": "from pkg import sql\n",
    "pkg/sql.py": SQL,
    "tests/test_names.py": (
        "from pkg.sql import Identifier\n\n\n"
        "def test_real_name():\n    assert Identifier('a.b').get_real_name() == 'b'\n"
    ),
    "tests/test_alias.py": (
        "from pkg.sql import Identifier\n\n\n"
        "def test_alias():\n    assert Identifier('a.b').get_alias() is None\n"
    ),
}


def test_a_comment_between_the_docstring_and_the_code_is_in_the_body() -> None:
    # The comment line is neither the docstring nor the header: editing it edits the body.
    assert changed_functions(SQL.encode(), SQL_HEAD.encode()) == [
        ("NameAliasMixin.get_real_name", 6, 8)
    ]
    # The same with no docstring: a comment just under the header.
    bare = "def f(\n    a,\n):\n    # one\n    return a\n"
    assert changed_functions(bare.encode(), bare.replace("one", "two").encode()) == [("f", 4, 5)]
    # The header's last line and the docstring stay outside it.
    assert changed_functions(bare.encode(), bare.replace("):", ") -> int:").encode()) is None
    doc = SQL.replace("Returns the real", "Gives the real")
    assert changed_functions(SQL.encode(), doc.encode()) is None


@pytest.mark.slow
def test_an_edit_of_a_commented_body_selects_the_tests_that_ran_it(repo: GitRepo) -> None:
    repo.write("review-map.yml", MAP)
    for path, text in SQLPARSE.items():
        repo.write(path, text)
    base = repo.commit("sqlparse's shape")
    dep = maprecord.record(repo.path, REVIEW_MAP, base, seed=3)
    repo.write("pkg/sql.py", SQL_HEAD)
    repo.commit("the real name is after the last dot")
    selection = _select(repo, base, dep)
    assert selection.nodeids == ("tests/test_names.py::test_real_name",)
    assert selection.reasons["tests/test_names.py::test_real_name"] == [
        "ran NameAliasMixin.get_real_name (lines 6-8 of pkg/sql.py)"
    ]


# rich e8b7fc1e: one word of Text.append_text's docstring. The map records no reads of
# ``__doc__``, so the importers stay; the rule and every reason say so.
TEXT = '''\
"""Rich text."""

REGISTRY = {}


class Text:
    def __init__(self, plain):
        self.plain = plain

    def append_text(self, text):
        """Append another Text instance. This method is more performant that Text.append."""
        self.plain += text.plain
        REGISTRY[self.plain] = self
        return self
'''
RICH = {
    "pkg/__init__.py": "",
    "pkg/text.py": TEXT,
    "pkg/other.py": "def width():\n    return 80\n",
    "tests/test_text.py": (
        "from pkg.text import Text\n\n\n"
        "def test_append():\n    assert Text('a').append_text(Text('b')).plain == 'ab'\n\n\n"
        "def test_doc():\n    assert 'Append' in Text.append_text.__doc__\n"
    ),
    "tests/test_other.py": (
        "from pkg.other import width\n\n\ndef test_width():\n    assert width() == 80\n"
    ),
}


@pytest.mark.slow
def test_a_docstring_only_change_selects_the_importers_and_says_why(repo: GitRepo) -> None:
    # append_text stores into a module global: a change of its code may leave state any
    # later test reads (every test). Its docstring alone changes no code: the importers.
    repo.write("review-map.yml", MAP)
    for path, text in RICH.items():
        repo.write(path, text)
    base = repo.commit("rich's shape")
    dep = maprecord.record(repo.path, REVIEW_MAP, base, seed=3)
    repo.write("pkg/text.py", TEXT.replace("performant that", "performant than"))
    repo.commit("fix a typo")
    selection = _select(repo, base, dep)
    assert selection.nodeids == ("tests/test_text.py::test_append", "tests/test_text.py::test_doc")
    assert selection.rule_counts == {"changed docstring": 2}
    for nodeid in selection.nodeids:
        assert selection.reasons[nodeid] == [
            "imports pkg/text.py: the docstring of Text.append_text changed and the map "
            "records no reads of __doc__"
        ]
    # A change of its code is another matter: every test, and the reason says why.
    repo.write(
        "pkg/text.py", TEXT.replace("self.plain += text.plain", "self.plain += text.plain * 2")
    )
    repo.commit("append twice")
    wide = _select(repo, base, dep)
    assert "tests/test_other.py::test_width" in wide.nodeids
    assert wide.reasons["tests/test_other.py::test_width"] == [
        "pkg/text.py: a changed function may change state that outlives its call"
    ]


def test_a_module_level_change_says_where_it_lies() -> None:
    head = TEXT.replace("REGISTRY = {}", "REGISTRY = {'x': None}")
    assert module_level_why(TEXT.encode(), head.encode()) == (
        "line 3 of the head is outside any function's body"
    )
    assert changed_docstrings(TEXT.encode(), head.encode()) == []
    doc = TEXT.replace('"""Rich text."""', '"""Rich text, styled."""')
    assert changed_docstrings(TEXT.encode(), doc.encode()) == ["the module"]


# boltons 5df26592c: args2sh's body changes, and no test of the base ran it (its doctests are
# not collected). The map records no run of it, which is also what a route it cannot see
# (code exec'd from the source's text, a thread C code starts) leaves behind: it does not
# decide, every importer stays, and every one of their reasons says why. ``upper`` is run
# by one test directly and by another only on a raw ``_thread`` thread, which coverage does
# not trace: the map cannot vouch for that test, whatever it decides for the path.
STRUTILS = """\
import _thread


def args2sh(args, sep=" "):
    return " ".join(args)


def upper(text):
    return text.upper()


def upper_in_thread(text):
    out, done = [], _thread.allocate_lock()
    done.acquire()

    def work():
        out.append(upper(text))
        done.release()

    _thread.start_new_thread(work, ())
    done.acquire()
    return out[0]
"""
BOLTONS = {
    "pkg/__init__.py": "",
    "pkg/strutils.py": STRUTILS,
    "pkg/funcutils.py": "from pkg import strutils\n\n\ndef ident(x):\n    return x\n",
    "tests/test_strutils.py": (
        "from pkg.strutils import upper\n\n\ndef test_upper():\n    assert upper('a') == 'A'\n"
    ),
    "tests/test_funcutils.py": (
        "from pkg.funcutils import ident\n\n\ndef test_ident():\n    assert ident(1) == 1\n"
    ),
    "tests/test_thread.py": (
        "from pkg.strutils import upper_in_thread\n\n\n"
        "def test_in_thread():\n    assert upper_in_thread('a') == 'A'\n"
    ),
}
UPPER = "tests/test_strutils.py::test_upper"
IDENT = "tests/test_funcutils.py::test_ident"
THREAD = "tests/test_thread.py::test_in_thread"


def _recorded_shape(root: Path, files: dict[str, str]) -> tuple[GitRepo, str, Path]:
    """``files`` committed as ``main`` under ``root``, and a dependency cache holding the
    map of that commit (recorded by ``replay select --dep-map auto``, as a user's first gate
    would)."""
    repo = GitRepo(root / "repo")
    repo.write("review-map.yml", MAP)
    for path, text in files.items():
        repo.write(path, text)
    base = repo.commit("the base")
    cache = root / "cache"
    proc = _select_cli(repo, base, cache)
    assert proc.returncode == 0, proc.stderr.decode()
    assert RECORDING in proc.stderr
    return repo, base, cache


@pytest.fixture(scope="module")
def boltons_shape(tmp_path_factory: pytest.TempPathFactory) -> tuple[GitRepo, str, Path]:
    """The shape above, with its map."""
    return _recorded_shape(tmp_path_factory.mktemp("boltons-shape"), BOLTONS)


def _select_cli(repo: GitRepo, base: str, cache: Path) -> subprocess.CompletedProcess[bytes]:
    return run_patchlane(
        "--repo", repo.path, "replay", "select", "--base", base, "--head", "HEAD",
        "--out", repo.path.parent / "slice.txt", "--json",
        "--dep-map", "auto", "--dep-cache", cache, "-v",
    )  # fmt: skip


RECORDING = b"recording the base's dependency map"


def _patched_select(
    shape: tuple[GitRepo, str, Path], branch: str, head: str, path: str = "pkg/strutils.py"
) -> dict[str, Any]:
    repo, base, cache = shape
    repo.checkout(base)
    repo.branch(branch, base)
    repo.checkout(branch)
    repo.write(path, head)
    repo.commit(branch)
    proc = _select_cli(repo, base, cache)
    assert proc.returncode == 0, proc.stderr.decode()
    assert RECORDING not in proc.stderr  # the base's map, from the cache
    selected: dict[str, Any] = json.loads(proc.stdout)
    return selected


@pytest.mark.slow
def test_code_no_test_ran_keeps_its_importers_and_every_reason_says_why(
    boltons_shape: tuple[GitRepo, str, Path],
) -> None:
    head = STRUTILS.replace('return " ".join(args)', "return sep.join(args)")
    selected = _patched_select(boltons_shape, "args2sh-sep", head)
    assert selected["dependency_map"] != "none"
    assert sorted(selected["reasons"]) == sorted([UPPER, IDENT, THREAD])
    left = (
        "the dependency map does not decide pkg/strutils.py: no test of the base ran the "
        "changed code (args2sh): what runs it, if anything, the map did not see"
    )
    assert selected["reasons"][IDENT] == [
        f"imports changed module pkg/strutils.py via tests/test_funcutils.py -> "
        f"pkg/funcutils.py; {left}"
    ]
    assert selected["reasons"][UPPER] == [f"imports changed module pkg/strutils.py; {left}"]
    # The thread's test is the map's blind one: its own reason comes first.
    assert selected["reasons"][THREAD] == [
        "imports changed module pkg/strutils.py; the dependency map cannot vouch for this "
        "test: started a raw _thread thread"
    ]


@pytest.mark.slow
def test_a_test_that_runs_the_changed_function_where_the_map_cannot_see_still_widens(
    boltons_shape: tuple[GitRepo, str, Path],
) -> None:
    # upper breaks. The map saw test_upper run it and decides the path: test_ident, which
    # never ran it, is left out; test_in_thread ran it on an untraced thread, and stays.
    head = STRUTILS.replace("return text.upper()", "return text.lower()")
    selected = _patched_select(boltons_shape, "upper-broken", head)
    assert sorted(selected["reasons"]) == sorted([UPPER, THREAD])
    assert selected["rules_of"][UPPER] == ["ran changed code"]
    assert selected["reasons"][UPPER] == ["ran upper (lines 9-9 of pkg/strutils.py)"]
    assert selected["rules_of"][THREAD] == ["static import graph"]
    assert selected["reasons"][THREAD] == [
        "imports changed module pkg/strutils.py; the dependency map cannot vouch for this "
        "test: started a raw _thread thread"
    ]


# boltons' test_once_thread_safety and socket servers: a test that starts ``threading``
# threads. Coverage traces them (``threading`` installs its hook in each new thread, through
# ``sys.settrace``); the recorder took that install's audit event for the project replacing
# the tracer and marked the test blind, so every such test stayed in every slice of a module
# it imports. Next to them, one that does replace the tracer, and is blind.
WORK = """\
import threading


def double(x):
    return x * 2


def triple(x):
    return x * 3


def in_thread(function, x):
    out = []
    thread = threading.Thread(target=lambda: out.append(function(x)))
    thread.start()
    thread.join()
    return out[0]
"""
THREADS = {
    "pkg/__init__.py": "",
    "pkg/work.py": WORK,
    "tests/test_double.py": (
        "from pkg.work import double, in_thread\n\n\n"
        "def test_double_in_thread():\n    assert in_thread(double, 2) == 4\n"
    ),
    "tests/test_triple.py": (
        "from pkg.work import in_thread, triple\n\n\n"
        "def test_triple_in_thread():\n    assert in_thread(triple, 2) == 6\n"
    ),
    "tests/test_tracer.py": (
        "import sys\n\nfrom pkg.work import double\n\n\n"
        "def test_double_under_its_own_tracer():\n"
        "    old = sys.gettrace()\n"
        "    sys.settrace(lambda *a: None)\n"
        "    try:\n        assert double(3) == 6\n"
        "    finally:\n        sys.settrace(old)\n"
    ),
}
DOUBLE = "tests/test_double.py::test_double_in_thread"
TRIPLE = "tests/test_triple.py::test_triple_in_thread"
TRACER = "tests/test_tracer.py::test_double_under_its_own_tracer"


@pytest.fixture(scope="module")
def thread_shape(tmp_path_factory: pytest.TempPathFactory) -> tuple[GitRepo, str, Path]:
    """The shape above, with its map."""
    return _recorded_shape(tmp_path_factory.mktemp("thread-shape"), THREADS)


@pytest.mark.slow
def test_a_function_run_on_a_threading_thread_selects_the_test_that_started_it(
    thread_shape: tuple[GitRepo, str, Path],
) -> None:
    head = WORK.replace("return x * 2", "return x + x")
    selected = _patched_select(thread_shape, "double-sum", head, "pkg/work.py")
    assert selected["reasons"][DOUBLE] == ["ran double (lines 5-5 of pkg/work.py)"]
    # test_triple_in_thread started a thread too, and never ran double: left out.
    assert TRIPLE not in selected["reasons"]


@pytest.mark.slow
def test_a_test_that_replaces_the_tracer_still_widens(
    thread_shape: tuple[GitRepo, str, Path],
) -> None:
    # double breaks. The map never saw test_tracer run it (its own tracer ran instead of
    # coverage's), and cannot vouch for it: it stays, and says why.
    head = WORK.replace("return x * 2", "return x * 3")
    selected = _patched_select(thread_shape, "double-broken", head, "pkg/work.py")
    assert sorted(selected["reasons"]) == sorted([DOUBLE, TRACER])
    assert selected["rules_of"][TRACER] == ["static import graph"]
    assert selected["reasons"][TRACER] == [
        "imports changed module pkg/work.py; the dependency map cannot vouch for this test: "
        "sys.settrace: (no arguments)"
    ]
