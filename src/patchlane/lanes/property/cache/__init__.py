"""The property result cache: a run's results kept under a key of everything it read
(``fingerprint``), believed only with the per-user key's MAC (``results``;
docs/architecture.md §2)."""
