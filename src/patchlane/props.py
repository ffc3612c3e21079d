"""Writing properties for patchlane's property lane: the ``@check`` decorator and ``case_rng``.

A property module (listed under ``lanes.property.module(s)`` in the review map) holds
top-level ``prop_*`` functions. patchlane runs three styles of them; this module is the
first-class one. A ``@check`` property receives keyword arguments that a generator draws
from a per-case random number generator::

    >>> from patchlane.props import check, run
    >>> @check(lambda rng: {"charge": rng.randint(0, 10_000), "refund": rng.randint(0, 12_000)})
    ... def prop_refund_is_bounded(charge, refund):
    ...     net = charge if refund > charge else charge - refund
    ...     assert 0 <= net <= charge, (charge, refund)
    >>> run(prop_refund_is_bounded, seed=20260924, cases=200)

Every case ``i`` gets its own ``random.Random`` derived with SHA-256 from
``(seed, property name, i)`` (see ``case_rng``). So case 17 can be re-run on its own,
without running cases 0-16, and the derivation depends neither on ``PYTHONHASHSEED`` nor on
the other properties of the module::

    >>> args = case_arguments(prop_refund_is_bounded, seed=20260924, index=17)
    >>> args == case_arguments(prop_refund_is_bounded, seed=20260924, index=17)
    True
    >>> sorted(args)
    ['charge', 'refund']

The other two styles need nothing from this module: the classic
``prop_x(seed: int, n: int = 200) -> None`` (patchlane calls ``prop_x(seed, cases)``), and
Hypothesis ``@given`` properties (run with patchlane's pinned settings).

A property fails by raising ``AssertionError``; any other exception is an error (also red).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["Generator", "case_arguments", "case_rng", "check", "generator_of", "run", "run_case"]

Generator = Callable[[random.Random], Mapping[str, Any]]
"""Draws one case's keyword arguments from that case's random number generator."""

F = TypeVar("F", bound=Callable[..., Any])

_ATTRIBUTE = "__patchlane_check__"
# Part of the derivation: changing it changes every case, so it is versioned, never edited.
_DOMAIN = b"patchlane.props.case_rng/v1"


def case_rng(seed: int, name: str, index: int) -> random.Random:
    """Return the random number generator of case ``index`` of property ``name``.

    The generator is seeded with the SHA-256 digest of ``(seed, name, index)`` (as a
    256-bit integer), so it is the same in every process, on every machine, whatever
    ``PYTHONHASHSEED`` is, and independent of every other case. ``name`` is the property's
    name as its module defines it (``prop_refund_is_bounded``).

    >>> case_rng(1, "prop_x", 0).random() == case_rng(1, "prop_x", 0).random()
    True
    >>> case_rng(1, "prop_x", 0).random() == case_rng(1, "prop_x", 1).random()
    False

    Raises ``TypeError`` for a seed or index that is not an ``int`` (``bool`` included) and
    ``ValueError`` for a negative one.
    """
    for label, value in (("seed", seed), ("index", index)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{label} must be an int, got {type(value).__name__}")
        if value < 0:
            raise ValueError(f"{label} must not be negative, got {value}")
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    # Lengths are part of the message, so that no (seed, name, index) collides with another.
    material = b"\0".join(
        (_DOMAIN, str(seed).encode(), str(len(name)).encode(), name.encode(), str(index).encode())
    )
    # Reproducible test data, not secrets: a seeded Mersenne Twister is what is wanted.
    return random.Random(int.from_bytes(hashlib.sha256(material).digest(), "big"))  # noqa: S311


def check(generate: Generator) -> Callable[[F], F]:
    """Mark a property whose cases' arguments come from ``generate(rng)``.

    ``generate`` receives the case's ``random.Random`` (see ``case_rng``) and returns the
    keyword arguments of the case as a mapping. The decorated function is returned
    unchanged (it stays callable with explicit arguments, e.g. from a unit test).

    >>> @check(lambda rng: {"x": rng.randint(0, 9)})
    ... def prop_small(x):
    ...     assert 0 <= x <= 9
    >>> generator_of(prop_small) is not None
    True

    Raises ``TypeError`` when ``generate`` is not callable.
    """
    if not callable(generate):
        raise TypeError(f"check() needs a callable generator, got {type(generate).__name__}")

    def decorate(fn: F) -> F:
        setattr(fn, _ATTRIBUTE, generate)
        return fn

    return decorate


def generator_of(fn: Callable[..., Any]) -> Generator | None:
    """Return the generator ``@check`` attached to ``fn``, or ``None`` if it has none."""
    generate = getattr(fn, _ATTRIBUTE, None)
    return generate if callable(generate) else None


def case_arguments(
    fn: Callable[..., Any], seed: int, index: int, name: str | None = None
) -> dict[str, Any]:
    """Return the keyword arguments of case ``index`` of the ``@check`` property ``fn``.

    ``name`` defaults to ``fn.__name__``. Raises ``TypeError`` when ``fn`` has no ``@check``
    generator or the generator does not return a mapping with string keys; whatever the
    generator raises propagates.
    """
    generate = generator_of(fn)
    if generate is None:
        raise TypeError(f"{getattr(fn, '__name__', fn)!r} is not decorated with @check")
    drawn = generate(case_rng(seed, name if name is not None else fn.__name__, index))
    if not isinstance(drawn, Mapping) or not all(isinstance(k, str) for k in drawn):
        raise TypeError(
            f"the @check generator must return a mapping of argument names, got {type(drawn).__name__}"
        )
    return dict(drawn)


def run_case(
    fn: Callable[..., Any], seed: int, index: int, name: str | None = None
) -> dict[str, Any]:
    """Run case ``index`` of the ``@check`` property ``fn`` alone; return its arguments.

    Raises what the property raises (``AssertionError`` when it fails), and what
    ``case_arguments`` raises.
    """
    arguments = case_arguments(fn, seed, index, name)
    fn(**arguments)
    return arguments


def run(fn: Callable[..., Any], seed: int, cases: int, name: str | None = None) -> None:
    """Run cases ``0 .. cases-1`` of the ``@check`` property ``fn``, stopping at the first
    failure.

    Returns ``None`` when every case holds. Re-raises the failing case's exception with a
    note naming the case index and its arguments (patchlane's lane records the same two in
    its report).
    """
    for index in range(cases):
        arguments = case_arguments(fn, seed, index, name)
        try:
            fn(**arguments)
        except Exception as e:
            e.add_note(f"patchlane case {index} (seed {seed}): arguments {arguments!r}")
            raise
