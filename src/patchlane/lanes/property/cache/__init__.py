"""The property lane's caches: a run's results kept under a key of everything it read
(``results``, with ``fingerprint``), and the base's oracle audit kept once per base
(``audits``); both believed only with the per-user key's MAC (``sealed``;
docs/architecture.md §2)."""
