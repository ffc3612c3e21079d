"""Infrastructure every layer above may use: git, trees, processes, the sandbox, caches and
the terminal. Nothing here knows what a lane, a report or a verdict is
(docs/architecture.md §6)."""
