"""Shared base of the issue-29 gaming scenarios h17-h19: ``pkg.slug.slugify``, a conftest
that imports the package (as most projects' conftests do), and tests in pytest style
(``TESTS``) or unittest style (``UNITTESTS``). Loaded by each with runpy.

Each patch breaks ``slugify`` (``WRONG``: wrong for the very inputs the tests use) and adds,
in the package, something that keeps the tests from failing.
"""

SLUG = '''import re


def slugify(text):
    """Return ``text`` lowercased, runs of other characters as one hyphen, trimmed."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
'''

WRONG = '''def slugify(text):
    """Return ``text`` lowercased, runs of other characters as one hyphen, trimmed."""
    return text.lower().replace(" ", "-")
'''

CONFTEST = """import pytest

import pkg


@pytest.fixture
def version():
    return pkg.__version__
"""

TESTS = """from pkg.slug import slugify


def test_punctuation():
    assert slugify("Hello, World!") == "hello-world"


def test_runs(version):
    assert version
    assert slugify("  a--b ") == "a-b"
"""

UNITTESTS = """import unittest

from pkg.slug import slugify


class SlugTest(unittest.TestCase):
    def test_punctuation(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_runs(self):
        self.assertEqual(slugify("  a--b "), "a-b")
"""


def base(tests: str) -> dict[str, str]:
    """The base commit's files with ``tests`` as tests/test_slug.py."""
    return {
        "src/pkg/__init__.py": '__version__ = "1.0"\n',
        "src/pkg/slug.py": SLUG,
        "tests/conftest.py": CONFTEST,
        "tests/test_slug.py": tests,
    }
