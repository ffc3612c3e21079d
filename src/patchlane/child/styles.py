"""Running one property in the child, in each of the three styles, and describing failures.

Styles:

- ``seed``: the classic ``prop_x(seed, n=200)``, called as ``prop_x(seed, cases)``. When the
  assertion's argument is a tuple ``(seed, i, *rest)`` the case index is ``i`` and the
  arguments are ``rest``.
- ``hypothesis``: a ``@given`` function, run under patchlane's pinned settings and seed.
  The arguments are those of the last failing call (Hypothesis replays the shrunk example
  last).
- ``check``: ``patchlane.props.check``; case ``i`` draws its arguments from its own RNG.

This module is imported by the child before the repository is on ``sys.path``.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

from patchlane import props
from patchlane.child import asserts

STYLES = ("seed", "hypothesis", "check")
MESSAGE_LIMIT = 4000
_STRING_LIMIT = 10_000
_ITEMS_LIMIT = 1000
_DEPTH_LIMIT = 20
_INNER = "__patchlane_inner__"


@dataclass(frozen=True)
class CaseFailure:
    """What the child reports about a failing property."""

    kind: str  # assertion | error
    case_index: int | None
    arguments: Any
    message: str


class Prepared:
    """One property ready to run exactly as the lane runs it.

    Calling it runs the property (all cases, or the one case asked for) and raises on
    failure; ``failure(exc)`` then describes that failure. ``__wrapped__`` is the author's
    own function (for Hypothesis, the undecorated test), for tools that read its source.
    """

    def __init__(
        self,
        name: str,
        style: str,
        wrapped: Callable[..., Any],
        run: Callable[[], None],
        locate: Callable[[BaseException], tuple[int | None, Any]],
        roots: Sequence[str],
        profile_slot: dict[str, Any] | None = None,
        refused: str | None = None,
    ) -> None:
        self.__name__ = name
        # Why the property cannot run at all (it is then reported with this message alone).
        self.refused = refused
        self.__wrapped__ = wrapped
        self.style = style
        self._run = run
        self._locate = locate
        self._roots = tuple(roots)
        self._profile_slot = profile_slot

    def __call__(self) -> None:
        self._run()

    def run_profiled(self, profiler: Callable[[FrameType, str, Any], object]) -> None:
        """Run once with ``profiler`` as ``sys.setprofile`` around the property's own
        code: for Hypothesis only inside each example (its engine would otherwise be
        profiled too, several times slower), else around the whole run. Raises what the
        property raises."""
        slot = self._profile_slot
        if slot is not None:
            slot["profiler"] = profiler
            try:
                self._run()
            finally:
                slot["profiler"] = None
            return
        sys.setprofile(profiler)
        try:
            self._run()
        finally:
            sys.setprofile(None)

    def failure(self, exc: BaseException) -> CaseFailure:
        """Return the report of ``exc`` raised by a call of this property."""
        case_index, arguments = self._locate(exc)
        kind = "assertion" if isinstance(exc, AssertionError) else "error"
        return CaseFailure(kind, case_index, json_safe(arguments), describe(exc, self._roots))


def style_of(fn: Any) -> str:
    """Return the style of property ``fn``: ``hypothesis``, ``check`` or ``seed``."""
    handle = getattr(fn, "hypothesis", None)
    if handle is not None and hasattr(handle, "inner_test"):
        return "hypothesis"
    if props.generator_of(fn) is not None:
        return "check"
    return "seed"


def prepare(
    name: str,
    fn: Any,
    *,
    seed: int,
    cases: int,
    case: int | None,
    pinned: Any,
    roots: Sequence[str],
) -> Prepared:
    """Return property ``fn`` (named ``name`` in its module) ready to run.

    ``case`` asks for one case only (``check``: that case alone; ``seed``: cases
    ``0..case``; ``hypothesis``: ignored, the same seed reproduces the run). ``pinned`` is
    the Hypothesis ``settings`` object built before the repository was importable, or
    ``None`` when Hypothesis was not imported then. Never raises: a property that cannot
    run comes back as one that raises a clear ``TypeError`` when called.
    """
    if not callable(fn):
        return _refusal(name, fn, f"{name} is not callable ({type(fn).__name__})", roots)
    style = style_of(fn)
    if style == "hypothesis":
        return _hypothesis(name, fn, seed, pinned, roots)
    if style == "check":
        return _check(name, fn, seed, cases, case, roots)
    return _seed(name, fn, seed, cases if case is None else case + 1, roots)


def refused(name: str, message: str, roots: Sequence[str], style: str = "unknown") -> Prepared:
    """Return a property that cannot run, reported as an error saying ``message``."""

    def run() -> None:
        raise TypeError(message)

    return Prepared(name, style, run, run, _nowhere, roots, refused=message)


def prepare_given(
    name: str, fn: Any, seed: int, pinned: Any, roots: Sequence[str], owner: type | None
) -> Prepared:
    """Return the ``@given`` test ``fn`` ready to run as a Hypothesis property; with
    ``owner`` (its test class) ``fn`` is the class's function, called on a new instance of
    ``owner`` made at each run (as pytest makes one per test)."""
    return _hypothesis(name, fn, seed, pinned, roots, owner)


def _refusal(name: str, fn: Any, message: str, roots: Sequence[str]) -> Prepared:
    def run() -> None:
        raise TypeError(message)

    return Prepared(name, "seed", fn if callable(fn) else run, run, _nowhere, roots)


def _nowhere(_exc: BaseException) -> tuple[int | None, Any]:
    return None, None


def _seed(name: str, fn: Any, seed: int, n: int, roots: Sequence[str]) -> Prepared:
    try:
        inspect.signature(fn).bind(seed, n)
    except TypeError as e:
        return _refusal(name, fn, f"{name} cannot be called as {name}(seed, n): {e}", roots)
    except ValueError:  # no signature (a builtin): let the call decide
        pass

    def run() -> None:
        fn(seed, n)

    def locate(exc: BaseException) -> tuple[int | None, Any]:
        # The classic convention: ``assert ..., (seed, i, *arguments)``.
        if isinstance(exc, AssertionError) and exc.args and isinstance(exc.args[0], tuple):
            info = exc.args[0]
            if (
                len(info) >= 2
                and _is_int(info[0])
                and info[0] == seed
                and _is_int(info[1])
                and info[1] >= 0
            ):
                return info[1], list(info[2:])
        return None, None

    return Prepared(name, "seed", fn, run, locate, roots)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check(
    name: str, fn: Any, seed: int, cases: int, case: int | None, roots: Sequence[str]
) -> Prepared:
    where: dict[str, Any] = {"index": None, "arguments": None}
    indices = range(cases) if case is None else range(case, case + 1)

    def run() -> None:
        for index in indices:
            where["index"], where["arguments"] = index, None
            arguments = props.case_arguments(fn, seed, index, name)
            where["arguments"] = arguments
            fn(**arguments)

    def locate(_exc: BaseException) -> tuple[int | None, Any]:
        return where["index"], where["arguments"]

    return Prepared(name, "check", fn, run, locate, roots)


def _hypothesis(
    name: str, fn: Any, seed: int, pinned: Any, roots: Sequence[str], owner: type | None = None
) -> Prepared:
    inner = fn.hypothesis.inner_test
    if pinned is None:
        # Hypothesis was not imported before the repository was on sys.path, so the one in
        # use may be the repository's own: its settings could not be trusted.
        message = (
            f"{name} is a Hypothesis property, but its module's source never names "
            "'hypothesis', so patchlane could not import and pin Hypothesis first"
        )
        return _refusal(name, inner, message, roots)
    import hypothesis

    inner = getattr(inner, _INNER, inner)  # prepared before: the author's function again
    last: dict[str, Any] = {}
    slot: dict[str, Any] = {"profiler": None}

    @functools.wraps(inner)
    def recording(*args: Any, **kwargs: Any) -> Any:
        profiler = slot["profiler"]
        if profiler is not None:
            sys.setprofile(profiler)
        try:
            return inner(*args, **kwargs)
        except BaseException:
            last["call"] = (args, kwargs)
            raise
        finally:
            if profiler is not None:
                sys.setprofile(None)

    setattr(recording, _INNER, inner)

    def run() -> None:
        # Applied at each call, not once: the same function may be prepared twice (the
        # audit's short probe and its full runs) with different settings. Our settings
        # must win over the author's @settings and any profile the module loaded;
        # Hypothesis refuses a second @settings, so the marker of the first is removed.
        if hasattr(fn, "_hypothesis_internal_settings_applied"):
            delattr(fn, "_hypothesis_internal_settings_applied")
        test = hypothesis.seed(seed)(pinned(fn))
        test.hypothesis.inner_test = recording
        last.clear()
        test(*(() if owner is None else (owner(),)))

    def locate(_exc: BaseException) -> tuple[int | None, Any]:
        if "call" not in last:
            return None, None
        args, kwargs = last["call"]
        try:
            bound = dict(inspect.signature(inner).bind_partial(*args, **kwargs).arguments)
            if owner is not None and bound:
                del bound[next(iter(bound))]  # self
            return None, bound
        except (TypeError, ValueError):
            return None, {"args": list(args), **kwargs}

    return Prepared(name, "hypothesis", inner, run, locate, roots, slot)


def describe(exc: BaseException, roots: Sequence[str]) -> str:
    """Return one message for ``exc``: type, text and the innermost line inside ``roots``.

    File names are relative to the root they are in, so that the message is the same
    whatever temporary directory the tree was materialised in. At most ``MESSAGE_LIMIT``
    characters.
    """
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__ must not hide the failure
        text = "<unprintable>"
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    explained = _explanation(exc)
    if explained and explained not in text:
        message = f"{message}; {explained}"
    where = _innermost(exc, roots)
    if where:
        message = f"{message} (at {where})"
    return message if len(message) <= MESSAGE_LIMIT else message[: MESSAGE_LIMIT - 3] + "..."


def _explanation(exc: BaseException) -> str | None:
    """The operands' values of a failing assert with a message (``asserts``), if any."""
    if not isinstance(exc, AssertionError):
        return None
    try:
        found = vars(exc).get(asserts.EXPLANATION)
    except Exception:  # noqa: BLE001 - a hostile exception must not hide the failure
        return None
    return found if isinstance(found, str) else None


def dir_prefix(directory: str) -> str:
    """Return ``directory`` with exactly one trailing separator (for prefix tests)."""
    return directory.rstrip(os.sep) + os.sep


def relative(filename: str, roots: Sequence[str]) -> str:
    """Return ``filename`` relative to the longest of ``roots`` holding it (POSIX), or
    ``"<outside the trees>"`` when none does (a temporary path would make the report
    differ from run to run)."""
    for prefix in sorted((dir_prefix(r) for r in roots), key=len, reverse=True):
        if filename.startswith(prefix):
            return filename[len(prefix) :].replace(os.sep, "/")
    return "<outside the trees>"


def _innermost(exc: BaseException, roots: Sequence[str]) -> str | None:
    prefixes = tuple(dir_prefix(r) for r in roots)
    found = None
    try:
        frames = traceback.extract_tb(exc.__traceback__)
    except Exception:  # noqa: BLE001 - reading source lines must not hide the failure
        return None
    for frame in frames:
        if frame.filename.startswith(prefixes):
            line = (frame.line or "").strip()
            where = f"{relative(frame.filename, roots)}:{frame.lineno}"
            found = f"{where}: {line}" if line else where
    return found


def json_safe(value: Any, depth: int = 0) -> Any:
    """Return ``value`` as JSON-ready data.

    ``None``, booleans, ints, finite floats and strings are kept (very long strings are
    cut); lists and tuples become lists, mappings with string keys dicts (other keys are
    ``repr``'d); NaN and infinities become their ``repr`` (``'nan'``, ``'inf'``); anything
    else becomes its ``repr()``. Never raises.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        # Python refuses to print ints of more than 4300 digits (and json with it).
        return value if value.bit_length() < 4000 else f"<int of {value.bit_length()} bits>"
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return value if len(value) <= _STRING_LIMIT else value[:_STRING_LIMIT] + "..."
    if depth >= _DEPTH_LIMIT:
        return _repr(value)
    if isinstance(value, list | tuple):
        items = [json_safe(v, depth + 1) for v in value[:_ITEMS_LIMIT]]
        return items + (["..."] if len(value) > _ITEMS_LIMIT else [])
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for i, (k, v) in enumerate(value.items()):
            if i >= _ITEMS_LIMIT:
                out["..."] = "..."
                break
            out[k if isinstance(k, str) else _repr(k)] = json_safe(v, depth + 1)
        return out
    return _repr(value)


def _repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not hide the failure
        return f"<unrepresentable {type(value).__name__}>"
    return text if len(text) <= _STRING_LIMIT else text[:_STRING_LIMIT] + "..."
