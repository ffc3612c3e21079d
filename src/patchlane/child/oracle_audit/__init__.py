"""The oracle audit (docs/architecture.md §2): each property must fail on mutants of the code
it checks, or its oracle is too weak to be evidence.

- ``audit``: what the child runs: mutate, run the property on each mutant, report survivors;
- ``mutants`` and ``mutations``: the mutants of one function, and the mutation operators;
- ``recompile`` and ``astnorm``: a mutant compiled back into its module; source compared
  without formatting.

It runs inside the property child, so the package's ``__init__`` imports nothing.
"""
