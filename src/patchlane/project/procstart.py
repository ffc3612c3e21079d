"""Whether a test file starts processes (docs/architecture.md §4).

A test that starts a process can run any of the project's code there: a console script, a
shell script that runs ``python -m pkg``, ``multiprocessing`` with the spawn method. The
import graph sees none of that, and neither does the dependency map (the child is not
traced), so such a test file is taken to reach every project module: it is selected for
any change to the project's code. Literal references (``"-m", "pkg.cli"``) still name the
module directly; this rule covers the routes no string names.
"""

from __future__ import annotations

import ast

# Modules whose import says the file starts processes. ``concurrent.futures`` and ``os``
# do not on their own (thread pools, paths): their process-starting names are below.
_PROCESS_MODULES = frozenset(
    {"subprocess", "multiprocessing", "pty", "pexpect", "sh", "plumbum", "sarge", "delegator",
     "invoke", "fabric", "asyncssh", "xprocess", "pytest_console_scripts", "scripttest"}
)  # fmt: skip
# ``os`` functions that start a process (``os.system``, ``from os import popen``).
_OS_STARTERS = frozenset(
    {"system", "popen", "posix_spawn", "posix_spawnp", "fork", "forkpty", "execv", "execve",
     "execl", "execle", "execlp", "execlpe", "execvp", "execvpe", "spawnl", "spawnle",
     "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "startfile"}
)  # fmt: skip
# Names that start a process wherever they come from (pytest-console-scripts's fixture).
_STARTERS = frozenset(
    {"ProcessPoolExecutor", "create_subprocess_exec", "create_subprocess_shell", "script_runner"}
)


def starts_process_here(node: ast.AST) -> bool:
    """Return whether this node says the file can start a process: it imports a
    process-starting module, names an ``os`` function that starts one (``os.system``,
    ``from os import popen``), names ``ProcessPoolExecutor``,
    ``asyncio.create_subprocess_exec`` or the ``script_runner`` fixture, or names
    ``sys.executable``. ``sourcescan.scan`` asks it of every node. Raises nothing."""
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] in _PROCESS_MODULES for a in node.names)
    if isinstance(node, ast.ImportFrom):
        top = (node.module or "").split(".")[0] if node.level == 0 else ""
        if top in _PROCESS_MODULES or any(a.name in _STARTERS for a in node.names):
            return True
        return top in ("os", "posix") and any(a.name in _OS_STARTERS for a in node.names)
    if isinstance(node, ast.Attribute):
        if node.attr in _STARTERS:
            return True
        owner = node.value.id if isinstance(node.value, ast.Name) else None
        return (owner in ("os", "posix") and node.attr in _OS_STARTERS) or (
            owner == "sys" and node.attr == "executable"
        )
    if isinstance(node, ast.Name):
        return node.id in _STARTERS
    return isinstance(node, ast.arg) and node.arg in _STARTERS
