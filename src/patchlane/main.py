"""Command-line entry point and the single error boundary.

Commands live one per module under ``patchlane.commands``; each exposes ``register`` (adds
its sub-parser) and ``run(args, ctx) -> int``. Command modules are imported only when their
command runs, so ``patchlane --help`` stays cheap.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from patchlane import __version__
from patchlane.errors import Exit, PatchlaneError, UsageError
from patchlane.infra import children
from patchlane.infra.ui import COLOR_CHOICES, Output, color_wanted, one_line

# name -> (module, one-line help). Order is the order of `patchlane --help`.
COMMANDS: dict[str, tuple[str, str]] = {
    "gate": ("gate", "classify, run every lane, write the verdict and the review note"),
    "triage": ("triage", "gate many candidate patches against one base, side by side"),
    "classify": ("classify", "list changed files and assign lanes"),
    "property": ("property", "run seeded property checks"),
    "fixture": ("fixture", "check fixture bytes against their locks, or write a new lock"),
    "freeze": ("freeze", "audit the freeze registry of flaky-test freezes"),
    "replay": ("replay", "select, run, verify, split and merge the replay slice"),
    "verdict": ("verdict", "apply the fixed reading order to lane reports"),
    "review": ("review", "render the four-field review note from the reports"),
    "init": ("init", "scaffold a review map, a freeze registry and fixture locks"),
    "check": ("check", "validate the review map, the freeze registry and every lock"),
    "demo": ("demo", "run the gate on agent-style patches to the bundled example"),
}


@dataclass(frozen=True)
class Context:
    """What every command gets besides its own arguments."""

    repo_option: str | None
    map_option: str | None
    out: Output

    def repo(self) -> Path:
        """Return the repository root (``--repo`` or the git top level of the cwd)."""
        from patchlane.infra import git, sandbox

        if self.repo_option is not None:
            path = Path(self.repo_option)
            if not path.is_dir():
                raise UsageError(f"--repo {self.repo_option}: not a directory")
            top = git.toplevel(path)
        else:
            top = git.toplevel(Path.cwd())
        # The user's repository is read-only to the patch's code, never hidden from it.
        sandbox.show(top)
        return top


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, exit 2, like every other bad input.
        line = one_line(f"{self.prog}: error: {message} (see '{self.prog} --help')")
        self.exit(Exit.BAD_INPUT, line + "\n")


def _global_options(suppress: bool) -> _Parser:
    """The global options, accepted before and after the command.

    The command's copy (``suppress``) has no defaults, so that an option given before the
    command is not reset by the command's parser.
    """
    default = argparse.SUPPRESS if suppress else None
    flag = argparse.SUPPRESS if suppress else False
    p = _Parser(add_help=False)
    g = p.add_argument_group("global options")
    g.add_argument(
        "--repo",
        metavar="DIR",
        default=default,
        help="repository (default: git top level of the cwd)",
    )
    g.add_argument(
        "--map",
        metavar="FILE",
        default=default,
        help="review map (default: review-map.yml at the repo root)",
    )
    g.add_argument("--json", action="store_true", default=flag, help="machine output on stdout")
    g.add_argument("-q", "--quiet", action="store_true", default=flag, help="print only errors")
    g.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=flag,
        help="more detail; tracebacks on internal errors",
    )
    g.add_argument(
        "--color",
        choices=COLOR_CHOICES,
        default=default,
        metavar="WHEN",
        help="colour verdicts and lane statuses: auto (on a terminal, unless NO_COLOR is set "
        "or TERM=dumb; a non-empty FORCE_COLOR forces it), always or never; never in --json "
        "output (default: auto)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit code; the only place errors become codes.

    ``PatchlaneError`` → one line on stderr and 2; Ctrl-C (SIGINT) → every child process
    group killed, one line and 130; anything unexpected → one line saying it is a bug and 4
    (``-v`` adds the traceback).
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    verbose = "-v" in args_list or "--verbose" in args_list
    with _sigint_stops_children():
        try:
            return _main(args_list, verbose)
        except KeyboardInterrupt:  # a second Ctrl-C while the first one unwound
            return _interrupted()


@contextlib.contextmanager
def _sigint_stops_children() -> Iterator[None]:
    """Install ``children.on_sigint`` for the block (main thread only; the previous handler
    is restored after): the children run in sessions of their own, which the terminal's
    SIGINT never reaches, and a thread pool unwinding would otherwise wait for them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, children.on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _main(args_list: list[str], verbose: bool) -> int:
    try:
        parser = _lazy_parser(args_list)
        try:
            args = parser.parse_args(args_list)
        except SystemExit as e:
            return int(e.code) if isinstance(e.code, int) else Exit.BAD_INPUT
        if args.command is None:
            parser.print_help()
            return Exit.BAD_INPUT
        ctx = Context(
            repo_option=args.repo,
            map_option=args.map,
            out=Output(
                json=args.json,
                quiet=args.quiet,
                verbose=args.verbose,
                color=not args.json and color_wanted(args.color, sys.stdout),
            ),
        )
        module = _import_command(COMMANDS[args.command][0])
        code: int = module.run(args, ctx)
        return code
    except PatchlaneError as e:
        # One line and never a traceback, even with -v (docs/architecture.md §5). one_line: a message
        # may quote a path or a ref with a newline in it, which must neither break the
        # one-line contract nor forge a line of our own output.
        print(one_line(f"patchlane: error: {e}"), file=sys.stderr)
        return Exit.BAD_INPUT
    except KeyboardInterrupt:
        return _interrupted()
    except Exception as e:  # noqa: BLE001 - this is the boundary that turns bugs into exit 4
        hint = "" if verbose else " (run with -v for the traceback)"
        message = f"internal error (a bug in patchlane {__version__}): {type(e).__name__}: {e}"
        print(one_line(f"patchlane: {message}") + hint, file=sys.stderr)
        if verbose:
            traceback.print_exc()
        return Exit.INTERNAL


def _interrupted() -> int:
    """Ctrl-C is the user's, not a bug: one line and a shell's own code for it (docs/
    architecture.md §3). Every child group is stopped (the SIGINT handler did so already;
    a KeyboardInterrupt raised otherwise gets it here)."""
    children.stop_all()
    print("patchlane: interrupted", file=sys.stderr, flush=True)
    return Exit.INTERRUPTED


def _import_command(module: str) -> Any:
    """Import ``patchlane.commands.MODULE`` and return it.

    ``__import__`` rather than ``importlib.import_module``: only the former goes through the
    interpreter's import machinery that ``python -X importtime`` instruments, so that a
    start-up measurement sees command modules (import_module would hide them).
    """
    name = f"patchlane.commands.{module}"
    __import__(name)
    return sys.modules[name]


def _lazy_parser(argv: list[str]) -> argparse.ArgumentParser:
    """Build the parser, importing only the command module the arguments name.

    ``patchlane --help`` then imports no command module at all.
    """
    parser = _Parser(
        prog="patchlane",
        description="Decide whether an agent's patch may go on to a shared evaluation host: "
        "reject, undecided or accept_for_review, with evidence a reviewer can check.",
        epilog="exit codes: 0 green/accept_for_review, 1 red/reject, 2 bad input, "
        "3 undecided, 4 internal error, 130 interrupted (Ctrl-C). "
        "'patchlane COMMAND --help' for a command's options.",
        parents=[_global_options(suppress=False)],
    )
    parser.add_argument("--version", action="version", version=f"patchlane {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    parents = [_global_options(suppress=True)]
    chosen = _command_in(argv)
    for name, (module, help_text) in COMMANDS.items():
        if name == chosen:
            mod = _import_command(module)
            mod.register(sub, name, help_text, parents)
        else:
            sub.add_parser(name, help=help_text, parents=parents)
    return parser


def _command_in(argv: list[str]) -> str | None:
    """Return the first positional argument if it names a command (option values skipped)."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--repo", "--map", "--color"):
            skip = True
        elif not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def console_main() -> NoReturn:
    """Entry point of the ``patchlane`` console script."""
    sys.exit(main())
