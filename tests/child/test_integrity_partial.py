"""The property child's checks are functions whose defaults are tuples, not
``functools.partial`` objects: a partial's ``keywords`` is a live, mutable dict, so code
under test that adds a keyword to ``integrity.verify`` would change what ``verify_module``
(whose default ``_verify`` it is) calls, without rebinding anything a tripwire compares by
identity. Found by a hostile review of the snapshot engine's first version.
"""

from __future__ import annotations

import types
from pathlib import Path

from patchlane.child import integrity
from tests.loader import Loader

SOURCE = """\
import random


def helper(a, b=1):
    return a + b


def prop_x():
    assert helper(1) == 2
"""


def test_verify_module_is_not_blinded_through_the_partials_keywords(load: Loader) -> None:
    module = load(SOURCE)
    file = module.__file__
    assert file is not None
    checks = integrity.plan(Path(file).read_bytes(), file, module.__name__, "")
    assert checks is not None
    snapshot = integrity.take(integrity.watched_modules())
    found, state = integrity.check_module(checks, module, snapshot)
    assert found == []
    keywords = getattr(integrity.verify, "keywords", None)
    try:
        # What code under test can do with the import system alone: no name is rebound.
        if isinstance(keywords, dict):
            keywords["_compare"] = lambda _taken, _verbs: []
        vars(module)["random"] = types.SimpleNamespace()
        changed = integrity.verify_module(state)
    finally:
        if isinstance(keywords, dict):
            keywords.pop("_compare", None)
    assert f"{module.__name__}.random" in changed


def test_the_checks_have_no_mutable_keywords() -> None:
    for check in (integrity.verify, integrity.compare):
        assert not hasattr(check, "keywords"), check
        assert isinstance(check, types.FunctionType)
        assert isinstance(check.__defaults__, tuple)
