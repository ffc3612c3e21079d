"""A two-test project in a real git repository, for the tasks run's slow tests: ``src/app``
(``add``) and ``tests/test_app.py`` (two tests), committed without a review map; and diffs
against it."""

from __future__ import annotations

from pathlib import Path

from tests.gitrepo import GitRepo

APP = "def add(a, b):\n    return a + b\n"
TESTS = (
    "from app import add\n\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n"
)
PYPROJECT = '[tool.pytest.ini_options]\npythonpath = ["src"]\ntestpaths = ["tests"]\n'
# Breaks test_add: a reject once the replay runs the slice.
BREAKS = b"""\
diff --git a/src/app/__init__.py b/src/app/__init__.py
--- a/src/app/__init__.py
+++ b/src/app/__init__.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a + b
+    return a - b
"""
# Keeps both tests green.
KEEPS = b"""\
diff --git a/src/app/__init__.py b/src/app/__init__.py
--- a/src/app/__init__.py
+++ b/src/app/__init__.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a + b
+    return b + a
"""


def make_project(path: Path) -> tuple[GitRepo, str]:
    """Return the repository at ``path`` and its base commit (no review map in it)."""
    repo = GitRepo(path)
    repo.write("src/app/__init__.py", APP)
    repo.write("tests/test_app.py", TESTS)
    repo.write("pyproject.toml", PYPROJECT)
    return repo, repo.commit("base")
