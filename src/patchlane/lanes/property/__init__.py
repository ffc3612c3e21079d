"""The property lane: seeded property checks, run in isolated children, whose oracles a
patch cannot weaken (docs/architecture.md §1, §2, §4).

- ``lane.run_property_lane``: the lane (materialise base and head, run its steps, report);
  its steps, each a function from frozen inputs to a frozen result: ``plan``, ``run``,
  ``outcomes`` (the judge step), ``faults`` (whose fault a failed import is) and
  ``audit`` (the oracle audit), over ``trees`` (what is materialised) and ``jobs`` (the
  children: payloads, homes, starting them);
- ``discover``: static discovery of property modules and their ``prop_*`` names;
- ``judge``: which of a child's result lines to believe (the child is started by
  ``infra.process``; its report is ``formats.property_report``);
- what runs inside the child is ``child.properties`` (with its styles, the integrity check
  and the oracle audit);
- ``cache/``: the result cache (a run's results, keyed by what it read: ``results``), the
  base's oracle audits (one per base: ``audits``) and the sealed entries both keep
  (``sealed``);
- ``testplan``: existing ``@given`` tests planned as properties (``child.pytests`` runs them).

This package's ``__init__`` imports nothing, so that importing one of the lane's modules
pays for no other.
"""

DEFAULT_MUTANTS = 20
"""Mutants per property for the oracle audit when ``--mutants`` is not given."""
