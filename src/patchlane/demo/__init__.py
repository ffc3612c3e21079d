"""The demo: agent-style patches to the bundled example (``example/``), each judged by the
real gate (``scenarios``), then some of them triaged at once as diffs (``triage``)."""
