"""The plugins a replay's run child adds to pytest besides its own runner: no reruns, and
Hypothesis as in the project's own ``pytest`` run but reproducible (``replay_run.start``
registers them; the tripwire watches this module as it watches ``replay_run``).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Any

import pytest

import patchlane

# Plugins that rerun a failing test until it passes: suite retries are ignored by the replay
# (a failed attempt is a failure). pytest-rerunfailures stays loaded, as in a plain run (its
# options, its marker, its status server's thread when xdist is installed), and only the hook
# implementations that rerun are taken from it (``NoRerun``). The others are not loaded: their
# options and marker are accepted and do nothing, so a project whose configuration names them
# still runs.
DISARMED_RERUN_PLUGINS = ("rerunfailures", "pytest_rerunfailures")
# The hooks through which pytest-rerunfailures reruns a test (its protocol runs the test again;
# its teardown holds the fixtures back for a rerun).
_RERUN_HOOKS = ("pytest_runtest_protocol", "pytest_runtest_teardown")
BLOCKED_RERUN_PLUGINS = ("flaky", "pytest-retry", "pytest_retry.retry_plugin")
_RERUN_OPTIONS: tuple[tuple[str, str, bool], ...] = (
    # (the module that defines it, the option, whether it takes a value)
    ("flaky", "--force-flaky", False),
    ("flaky", "--max-runs", True),
    ("flaky", "--min-passes", True),
    ("flaky", "--no-flaky-report", False),
    ("flaky", "--no-success-flaky-report", False),
    ("pytest_retry", "--retries", True),
    ("pytest_retry", "--retry-delay", True),
    ("pytest_retry", "--cumulative-timing", True),
)


class NoRerun:
    """Takes the reruns out of pytest-rerunfailures (loaded as in a plain run), and accepts
    the blocked rerun plugins' options and marker, which then do nothing (only where such a
    plugin is installed: elsewhere a plain run has no such option either)."""

    def pytest_addoption(self, parser: pytest.Parser) -> None:
        installed = [r for r in _RERUN_OPTIONS if importlib.util.find_spec(r[0]) is not None]
        if not installed:
            return
        group = parser.getgroup("patchlane-no-rerun", "rerun options (ignored by patchlane replay)")
        taken = _defined_options(parser)
        for _, option, takes_value in installed:
            if option in taken:
                continue
            try:
                if takes_value:
                    group.addoption(option, action="append", default=[], dest=f"_pl_{option}")
                else:
                    group.addoption(option, action="store_true", dest=f"_pl_{option}")
            except (ValueError, argparse.ArgumentError):
                continue  # some plugin defines it: its definition stays, and nothing reads it

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        manager = config.pluginmanager
        kept = [p for n in DISARMED_RERUN_PLUGINS if (p := manager.get_plugin(n)) is not None]
        for plugin in kept:
            for hook in _RERUN_HOOKS:
                caller = getattr(manager.hook, hook, None)
                remove = getattr(caller, "_remove_plugin", None)
                if remove is None:
                    continue
                try:
                    remove(plugin)
                except ValueError:
                    continue  # it implements no such hook
        blocked = any(importlib.util.find_spec(m) is not None for m in ("flaky", "pytest_retry"))
        named = (str(m).split(":")[0].split("(")[0].strip() for m in config.getini("markers"))
        if blocked and "flaky" not in named:
            config.addinivalue_line("markers", "flaky: rerun marker (ignored by patchlane replay)")


def _defined_options(parser: pytest.Parser) -> set[str]:
    """The option strings already added to ``parser`` by any plugin. pytest 8 builds its
    argparse parser only when it parses, so a second definition of an option fails there,
    not where it is added: the names are looked up first."""
    names: set[str] = set()
    groups = [*getattr(parser, "_groups", ()), getattr(parser, "_anonymous", None)]
    for group in groups:
        for option in getattr(group, "options", ()) or ():
            names.update(option.names())
    return names


class HypothesisAsInPytest:
    """Hypothesis in the slice as in the project's own ``pytest`` run, but reproducible.

    - Its examples come from the run's hash seed (``--hypothesis-seed``, unless the
      project's configuration sets one), drawn afresh for each run and never the public
      seed: the receipt's ``hash_seed`` stands for them, and a run given it again
      (``replay run --hash-seed``) draws the same examples.
    - patchlane's own modules are not the project's: Hypothesis draws some examples from the
      constants of "local" modules (not in site-packages), and an editable install of
      patchlane would add thousands of its constants to the project's few, so a value the
      project's own code names (``if n == 123456789``) would be drawn far less often than
      in a plain ``pytest`` run. They are marked as already scanned.
    - A Hypothesis test that passes is run again under ``EXTRA_SEEDS`` more seeds (derived
      from the run's): a bug that one run of the suite finds only now and then (an example
      the project's constants suggest) is missed by one fixed seed every time, so one seed
      alone would be weaker evidence than the project's own unseeded run.
    """

    EXTRA_SEEDS = 2

    def __init__(self, seed: str | None) -> None:
        self.seed = seed
        # Whether the run's seed is still to be put in force: Hypothesis is imported only
        # when the tests import it, as in a plain run (a seed given to its plugin would
        # import it at configure time), so it is set just before the first test that uses it.
        self.pending = seed is not None

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        if getattr(config.option, "hypothesis_seed", None) is not None:
            self.pending = False  # the project's configuration chose its own

    def _force_seed(self) -> None:
        core = sys.modules.get("hypothesis.core")
        if not self.pending or core is None or not hasattr(core, "global_force_seed"):
            return
        self.pending = False
        core.global_force_seed = self.seed  # type: ignore[attr-defined]

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        # Hypothesis loads its built-in "ci" profile by itself when it sees a CI variable
        # (``CI``, ``GITHUB_ACTIONS``, ...), and that profile derandomizes: examples then
        # come from each test's source, the run's seed is ignored, and the same slice would
        # draw one set of examples on a laptop and another on a CI runner or host. A profile
        # the project loads itself is its choice and is kept. Hypothesis is imported by the
        # test modules (not before, as in a plain run), so the tests they decorated under
        # that profile are given its settings without derandomizing, here, before any runs.
        if self.seed is None or "hypothesis" not in sys.modules:
            return
        from hypothesis import settings

        ci = getattr(sys.modules.get("hypothesis._settings"), "CI", None)
        if (
            ci is None
            or settings.get_current_profile_name() != "ci"
            or settings.get_profile("ci") is not ci
            or not ci.derandomize
        ):
            return
        settings.register_profile("patchlane-seeded-ci", derandomize=False)
        settings.load_profile("patchlane-seeded-ci")
        for item in items:
            test = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
            held = getattr(test, "_hypothesis_internal_use_settings", None)
            if isinstance(held, settings) and held.derandomize:
                test._hypothesis_internal_use_settings = settings(  # type: ignore[union-attr]
                    parent=held, derandomize=False
                )

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        test = getattr(item, "obj", None)
        if getattr(test, "is_hypothesis_test", False):
            self._force_seed()
        result = yield  # an exception of the first run propagates from here
        if not getattr(test, "is_hypothesis_test", False) or self.seed is None:
            return result
        if getattr(test, "_hypothesis_internal_use_seed", None) is not None:
            return result  # the test pins its own seed: another run draws the same
        core = sys.modules.get("hypothesis.core")
        if core is None or not hasattr(core, "global_force_seed"):
            return result
        saved = core.global_force_seed
        try:
            for extra in range(1, self.EXTRA_SEEDS + 1):
                core.global_force_seed = f"{self.seed}/{extra}"  # type: ignore[attr-defined]
                item.runtest()  # a failure here fails the test's call, as the first would
        finally:
            core.global_force_seed = saved  # type: ignore[attr-defined]
        return result

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        providers = sys.modules.get("hypothesis.internal.conjecture.providers")
        seen = getattr(providers, "_seen_modules", None)
        if not isinstance(seen, set):
            return
        # By file, not name: whatever the module objects are called.
        ours = os.path.dirname(os.path.abspath(patchlane.__file__)) + os.sep  # noqa: PTH100, PTH120
        for module in list(sys.modules.values()):
            where = getattr(module, "__file__", None)
            if isinstance(where, str) and os.path.abspath(where).startswith(ours):  # noqa: PTH100
                seen.add(id(module))
