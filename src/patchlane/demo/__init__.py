"""The demo: agent-style patches to the bundled example (``example/``), each judged by the
real gate (``scenarios``)."""
