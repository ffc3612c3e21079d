"""``child.snapshot``: the engine both tripwires capture, compare and restore with."""

from __future__ import annotations

import types

from patchlane.child import snapshot as engine


class _Base:
    def greet(self) -> str:
        return "hello"


def _module() -> types.ModuleType:
    """A fresh module defining a class with a base, a function and some state."""
    module = types.ModuleType("plt_engine_synthetic")

    class Box(_Base):
        size = 2

        def open(self) -> str:
            return "open"

    Box.__module__ = module.__name__
    Box.__qualname__ = "Box"

    def helper(x: int, y: int = 1) -> int:
        return x + y

    module.Box = Box  # type: ignore[attr-defined]
    module.helper = helper  # type: ignore[attr-defined]
    module.state = []  # type: ignore[attr-defined]
    return module


def _take(module: types.ModuleType, how: str) -> engine.Snapshot:
    spaces: list[engine.Space] = []
    keep = callable
    classes = (module.__name__ + ".", how, (module.__name__,))
    engine.capture_module(spaces, set(), module, module.__name__, keep, classes)
    return engine.snapshot(spaces, engine.functions(spaces))


def test_one_phrase_per_change_and_restore_puts_everything_back() -> None:
    module = _module()
    taken = _take(module, "class")
    box, helper, code = module.Box, module.helper, module.helper.__code__
    assert engine.compare(taken) == []
    assert engine.unchanged(taken[0])
    module.state = [1]  # state, not a rebinding
    module.helper = lambda x, y=1: 0
    del box.open
    box.close = lambda self: None
    helper.__code__ = (lambda x, y=1: 0).__code__
    assert not engine.unchanged(taken[0])
    assert engine.compare(taken) == [
        "plt_engine_synthetic.helper was replaced",
        "plt_engine_synthetic.Box.open was deleted",
        "plt_engine_synthetic.Box.close was added",
        "plt_engine_synthetic.helper.__code__ was replaced",
    ]
    assert engine.compare(taken, engine.NAMES)[0] == "plt_engine_synthetic.helper"
    assert engine.verify(taken)
    assert engine.compare(taken) == []
    assert module.helper is helper and helper.__code__ is code
    assert box().open() == "open" and "close" not in vars(box)


def test_a_shadow_space_counts_only_additions_that_shadow() -> None:
    module = _module()
    taken = _take(module, "shadow")
    box = module.Box
    box.fresh = lambda self: None  # a fresh name shadows nothing the captured code calls
    assert engine.compare(taken) == []
    box.greet = lambda self: "forced"  # a base class defines it: the base's is shadowed
    box.__call__ = lambda self: None  # a dunder
    assert sorted(engine.compare(taken)) == [
        "plt_engine_synthetic.Box.__call__ was added",
        "plt_engine_synthetic.Box.greet was added",
    ]


def test_an_object_space_counts_every_addition_but_plain_data() -> None:
    class Writer:
        def emit(self) -> None:
            return None

    writer = Writer()
    live = vars(writer)
    taken = engine.snapshot(
        [engine.space("patchlane's Writer", live, {}, engine.OBJECT, live)], engine.NO_FUNCTIONS
    )
    writer.count = 3  # type: ignore[attr-defined]
    assert engine.compare(taken) == []
    writer.emit = lambda: None  # type: ignore[method-assign]
    assert engine.compare(taken) == ["patchlane's Writer.emit was added"]
