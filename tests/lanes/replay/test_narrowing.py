"""Narrowings the dependency map promises (docs/how-to/dependency-map.md) on the shapes of
real projects' commits (issue 31), with real recordings on real git repositories."""

from __future__ import annotations

import pytest

from patchlane.lanes.replay import maprecord
from patchlane.lanes.replay.mapselect import changed_docstrings, changed_functions, module_level_why
from tests.formats.test_depmap import MAP, REVIEW_MAP, _select
from tests.gitrepo import GitRepo

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
