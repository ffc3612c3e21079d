"""Code imported inside a child interpreter that runs the patch's (or the base's) code: the
in-child guard, the read log and the dependency recorder.

Everything here imports only the standard library (an import-linter contract in the test
suite holds it to that): it loads before the project's code, so it must be cheap, and it
trusts no global the code under test could have rebound (docs/architecture.md §6)."""
