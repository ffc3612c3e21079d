"""What patchlane knows about the project under review, read from the trusted base: its review
map, the classification of a patch's paths, its import graph, the static test-selection rules
and its compiled builds. The gate and every lane build on it; it knows no lane
(docs/architecture.md §6)."""
