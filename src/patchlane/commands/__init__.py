"""One module per sub-command: ``register(sub, name, help, parents)`` and ``run(args, ctx)``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from patchlane.ui import Output


def publish(out: Output, data: Any, path: str | Path | None, summary: Callable[[], None]) -> None:
    """Write a report to ``--out`` (atomically) when given, then show it: with ``--json`` the
    same bytes on stdout (also for a path that is not UTF-8), else the human ``summary``."""
    from patchlane.jsonio import dumps_report, write_json
    from patchlane.ui import write_stdout

    if path:
        write_json(Path(path), data)
    if out.json:
        write_stdout(dumps_report(data))
    else:
        summary()


def seed_value(text: str) -> int:
    """argparse type for ``--seed``: an integer from 0 to 2**32 - 1 (the replay passes it on
    as ``PYTHONHASHSEED``, which accepts no other). Raises ``ArgumentTypeError``."""
    import argparse

    from patchlane.config import MAX_SEED

    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text[:40]!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be from 0 to {MAX_SEED}, not {text[:40]}")
    return value
