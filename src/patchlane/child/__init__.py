"""Code imported inside a child interpreter that runs the patch's (or the base's) code.

- ``properties``: the property child (``python -m patchlane.child.properties``), with
  ``styles`` (the property styles it runs), ``asserts`` (assert explanations), ``integrity``
  (what a property relies on, checked not rebound), ``pytests`` (``@given`` tests as
  properties) and ``oracle_audit/`` (mutants of the code a property checks);
- ``replay_collect`` and ``replay_run``: the replay's collection and run children, with
  ``tripwire`` (the run child's check of its own outcome machinery) and ``channel`` (the
  outcome stream to the parent); ``recorder`` and ``importstart``: the dependency recorder;
  ``calls`` (the changed functions' calls a vacuity run records) and ``witness`` (the child
  that makes them again where no test runs: ``python -m patchlane.child.witness``);
- ``guard`` and ``reads``: the in-child audit hook, and the log of what a run reads;
- ``launch``: the launcher a replay's test process starts under when it sees the host's
  process table (run by path, never imported: a Landlock domain, then the test process);
- ``namespaces``: the one name (``Namespace``) for a module's or class's namespace, which
  ``integrity`` and ``tripwire`` capture and compare.

It loads before the project's code, so it must be cheap, and it trusts no global the code
under test could have rebound. Beside the standard library it imports only pytest,
coverage and Hypothesis (whose process it is), ``props`` and the stdlib-only helpers of
``infra.bytecode`` and ``inputs.untrusted``; an import-linter contract in the test suite
keeps parsers, crypto, git, process and sandbox code out (docs/architecture.md §6).
"""
