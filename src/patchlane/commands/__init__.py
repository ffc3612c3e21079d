"""One module per sub-command: ``register(sub, name, help, parents)`` and ``run(args, ctx)``.

Options and output helpers several commands share live in ``options``.
"""
