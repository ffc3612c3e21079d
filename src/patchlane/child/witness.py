"""The witness: the changed functions called again where no test runs (child side).

Started as ``python -m patchlane.child.witness`` (``vacuity.witness.run_witness``) in the same
sandbox and presentation of the tree as the vacuity check's test process, but in a checkout
whose test roots, conftests and test files are gone, with the environment of a plain run
(no ``PYTEST_CURRENT_TEST``) and without pytest imported. The job (JSON on stdin) holds the
recorded run's ``sys.path`` and its calls (module, qualified name, pickled arguments): each
is made twice from this module's own frames, the second pass in reverse order, and each
answer is sent back pickled (``dumped``) for the parent to compare bytes with what the tests
saw. Code that answers one way inside its tests and another here knows it is being tested.

Standard library only (it must not import pytest), plus patchlane's stdlib-only helpers.
"""

from __future__ import annotations

import base64
import importlib
import inspect
import io
import json
import os
import pickle
import sys
import types
from pathlib import Path
from typing import Any

from patchlane.child.channel import ResultWriter, last_line
from patchlane.infra.bytecode import import_tree_from_source

PROTOCOL = 4
PICKLE_LIMIT = 16 * 1024
# What a call's answer is when it has none to compare (the parent skips the call).
# ``ARGS`` (the arguments do not unpickle here) and ``UNPICKLABLE`` are no call to judge;
# the others are answers that differ from any value the tests saw.
RAISED, MISSING, NONE = "!raised", "!missing", "!none"
ARGS, UNPICKLABLE = "!args", "!unpicklable"


def dumped(value: object) -> bytes | None:
    """``value`` pickled in fast mode (protocol ``PROTOCOL``), or ``None`` when it does not
    pickle (or is recursive, or is bigger than ``PICKLE_LIMIT``). Never raises."""
    out = io.BytesIO()
    try:
        pickler = pickle.Pickler(out, protocol=PROTOCOL)
        pickler.fast = True  # no memo: the bytes do not depend on shared references
        pickler.dump(value)
    except Exception:  # noqa: BLE001 - whatever the value's own reducers raise: skipped
        return None
    data = out.getvalue()
    return data if len(data) <= PICKLE_LIMIT else None


def resolve(module: str, qualname: str) -> types.FunctionType | None:
    """The function ``qualname`` of ``module`` (imported), its decorators and
    ``staticmethod``/``classmethod`` wrappers taken off, or ``None`` when it is not there
    (or raises on the way)."""
    try:
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = inspect.getattr_static(target, part)
            target = getattr(target, "__func__", target)
        for _ in range(50):  # a __wrapped__ chain may loop
            if isinstance(target, types.FunctionType) and target.__code__.co_qualname == qualname:
                return target
            if not hasattr(target, "__wrapped__"):
                return None
            target = target.__wrapped__
    except Exception:  # noqa: BLE001 - the module may not import here: no call to make
        return None
    return None


def call(module: str, qualname: str, args: str) -> str:
    """Make one recorded call; return its answer pickled (base64) or why there is none."""
    function = resolve(module, qualname)
    if function is None:
        return MISSING
    try:
        positional, keywords = pickle.loads(base64.b64decode(args))  # noqa: S301 - sandboxed
    except Exception:  # noqa: BLE001 - a class of the tests' own, hidden here: no call
        return ARGS
    try:
        result = function(*positional, **keywords)
    except Exception:  # noqa: BLE001 - an exception is no answer to compare
        return RAISED
    if result is None:
        return NONE
    data = dumped(result)
    return UNPICKLABLE if data is None else base64.b64encode(data).decode("ascii")


def main() -> None:
    """Run the job read from stdin; always ends the process (``os._exit``)."""
    job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    writer = ResultWriter(int(job["result_fd"]), str(job["token"]))
    root = Path.cwd()
    import_tree_from_source(root)
    # The recorded run's import path, its tree's places moved to this tree's.
    was = str(job["root"]).rstrip(os.sep)
    here = os.fspath(root)
    sys.path[:] = [
        here + p[len(was) :] if p == was or p.startswith(was + os.sep) else p
        for p in job["sys_path"]
        if isinstance(p, str)
    ]
    sys.path_importer_cache.clear()
    calls = [(str(m), str(q), str(a)) for m, q, a in job["calls"]]
    order = list(range(len(calls)))
    for round_, indices in ((1, order), (2, order[::-1])):
        for i in indices:
            try:
                answer = call(*calls[i])
            except BaseException as e:  # noqa: BLE001 - SystemExit from the code: no answer
                answer = f"{RAISED} {last_line(type(e).__name__)}"
            writer.emit({"w": i, "round": round_, "a": answer})
    writer.finish()


if __name__ == "__main__":
    try:
        main()
    finally:
        os._exit(3)
