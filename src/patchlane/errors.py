"""Exit codes and the error classes the single error boundary in ``main`` maps to them."""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    """Process exit codes, identical for every command (docs/architecture.md §3)."""

    GREEN = 0
    RED = 1
    BAD_INPUT = 2
    UNDECIDED = 3
    INTERNAL = 4
    # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C.
    INTERRUPTED = 130


class PatchlaneError(Exception):
    """An error the user can fix; ``main`` prints ``str(error)`` on one line and exits 2."""


class UsageError(PatchlaneError):
    """The command line asks for something that cannot be done."""


class InputError(PatchlaneError):
    """A file is malformed. The message starts with the file name and, where known, the line."""

    def __init__(self, file: str, message: str, line: int | None = None) -> None:
        self.file = file
        self.line = line
        self.message = message
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {message}")


class MapError(InputError):
    """The review map is malformed."""


class LockError(InputError):
    """A fixture lock is malformed or unsafe."""


class ReportError(InputError):
    """A lane report or verdict file given on the command line is malformed."""


class DependencyMapError(InputError):
    """A dependency map file (``replay map``) is malformed."""


class PatchApplyError(InputError):
    """A patch given as a file (``gate --patch``) is empty, is not a patch, or does not
    apply to the base; the message names the patch and the first failing file and hunk."""


class UnsafeWriteError(InputError):
    """A place patchlane was asked to write to is a symbolic link (or lies under one inside
    the repository), or is not a file or directory where one is needed. The repository is
    hostile (docs/architecture.md §2): a committed link could send evidence over a source file or out
    of the repository, so it is refused before anything is cleared or written."""


# The one wording of that refusal, shared by every writer (and matched by the tests).
LINK_REFUSED = "is a symbolic link; patchlane never writes through one"


class GitError(PatchlaneError):
    """Git could not answer: an unknown ref, a missing merge base, not a repository."""


class EnvironmentFault(PatchlaneError):
    """Something the environment patchlane runs in lacks (a third-party package) fails the
    base and the head alike: not the patch's fault, and no evidence about it either. The
    message names what is missing and how to install it."""


class ForeignCode(PatchlaneError):
    """A test run imported a module of the project from outside the tree it judges (an
    editable install pointing at another work tree, a regular install, another clone): what
    it says is no evidence about the tree (docs/architecture.md §2). The message names the
    modules and where they came from. The gate makes it ``undecided`` (rule 6); a command
    that runs tests exits 2 with it."""
