"""Tests that cannot fail are not evidence (docs/architecture.md §1 rule 6, §2).

For the tests that ran the changed code: impossible variants (``variants``) that must fail
at the head where they fail at the base, the same tests run again in reverse order in one
process (``check``), and the values the patch adds to the code that stand in the base's
test files (``copied``).
"""
