"""One module per sub-command: ``register(sub, name, help, parents)`` and ``run(args, ctx)``."""
