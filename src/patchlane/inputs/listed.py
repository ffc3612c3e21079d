"""The getters of ``inputs.fields.Fields`` that read a list or a nested mapping: a list of
strings (``text_list``), a mapping (``mapping``), a list (``sequence``), one listed mapping
(``element``) and each of them (``items``). Split from ``inputs.fields`` (``Fields`` is the
one class that has them), so that it stays one reader of a size to read.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Self, TypeVar, overload

from patchlane.errors import InputError
from patchlane.inputs.values import MISSING, At, FieldPath

D = TypeVar("D")


class CollectionGetters(ABC):
    """The list and mapping getters of ``Fields``, which supplies the primitives below."""

    data: Mapping[str, Any]
    path: FieldPath

    @abstractmethod
    def at(self, value: Mapping[str, Any], path: FieldPath) -> Self:
        """Return a reader of the mapping ``value``, found at ``path`` of the document."""

    @abstractmethod
    def mapping_kind(self) -> str:
        """Return what the document's messages call a mapping."""

    @abstractmethod
    def fail(self, at: At, message: str, *, line: int | None = None) -> InputError:
        """Return ``FIELD: message`` about the field at ``at`` (``Fields.fail``)."""

    @abstractmethod
    def wrong(self, at: At, expected: str, value: Any, *, got: bool = True) -> InputError:
        """Return ``FIELD: expected EXPECTED, got KIND`` (``Fields.wrong``)."""

    @abstractmethod
    def _value(self, key: str, default: Any) -> Any:
        """Return the value at ``key``, ``MISSING`` for an absent key with a default."""

    @overload
    def text_list(
        self,
        key: str,
        *,
        expected: str = ...,
        item: str | None = ...,
        accept: Callable[[str], object] | None = ...,
        check: Callable[[str], str | None] | None = ...,
        duplicate: str | None = ...,
    ) -> tuple[str, ...]: ...
    @overload
    def text_list(
        self,
        key: str,
        *,
        expected: str = ...,
        item: str | None = ...,
        accept: Callable[[str], object] | None = ...,
        check: Callable[[str], str | None] | None = ...,
        duplicate: str | None = ...,
        default: D,
    ) -> tuple[str, ...] | D: ...
    def text_list(
        self,
        key: str,
        *,
        expected: str = "a list of strings",
        item: str | None = "a string",
        accept: Callable[[str], object] | None = None,
        check: Callable[[str], str | None] | None = None,
        duplicate: str | None = None,
        default: Any = MISSING,
    ) -> Any:
        """Return the list of strings at ``key`` as a tuple, in order.

        A value that is not a list raises ``KEY: expected EXPECTED, got KIND``. Each item,
        in order, is refused at its own line and name (``KEY[i]``): ``expected ITEM, got
        KIND`` when it is not a string ``accept`` takes (``None``: any string), the problem
        ``check`` returns, and, when ``duplicate`` is given, ``duplicate.format(item)``
        (e.g. ``"node id {!r} is listed twice"``) for an item equal to an earlier one. With
        ``item=None`` an item that is not such a string refuses the whole list instead
        (``KEY: expected EXPECTED, got KIND``, on the list's line).
        """
        value = self._value(key, default)
        if value is MISSING:
            return default
        if not isinstance(value, list):
            raise self.wrong(key, expected, value)
        seen: set[str] = set()
        for index, entry in enumerate(value):
            if not isinstance(entry, str) or (accept is not None and not accept(entry)):
                if item is None:
                    raise self.wrong(key, expected, value)
                raise self.wrong((key, index), item, entry)
            problem = check(entry) if check is not None else None
            if problem:
                raise self.fail((key, index), problem)
            if duplicate is not None:
                if entry in seen:
                    raise self.fail((key, index), duplicate.format(entry))
                seen.add(entry)
        return tuple(value)

    @overload
    def mapping(self, key: str, *, expected: str | None = ...) -> Self: ...
    @overload
    def mapping(self, key: str, *, expected: str | None = ..., default: D) -> Self | D: ...
    def mapping(self, key: str, *, expected: str | None = None, default: Any = MISSING) -> Any:
        """Return a reader of the mapping at ``key``. Raises ``expected EXPECTED, got KIND``
        for anything else (EXPECTED defaulting to ``Wording.mapping``: "a mapping", or "an
        object" in JSON)."""
        value = self._value(key, default)
        if value is MISSING:
            return default
        if not isinstance(value, dict):
            raise self.wrong(key, expected or self.mapping_kind(), value)
        return self.at(value, (*self.path, key))

    @overload
    def sequence(
        self, key: str, *, expected: str = ..., non_empty: bool = ..., got: bool = ...
    ) -> list[Any]: ...
    @overload
    def sequence(
        self, key: str, *, expected: str = ..., non_empty: bool = ..., got: bool = ..., default: D
    ) -> list[Any] | D: ...
    def sequence(
        self,
        key: str,
        *,
        expected: str = "a list",
        non_empty: bool = False,
        got: bool = True,
        default: Any = MISSING,
    ) -> Any:
        """Return the list at ``key`` (its items unchecked).

        Raises ``expected EXPECTED, got KIND`` (without ``got``: ``expected EXPECTED``) for
        anything else, and for an empty list when ``non_empty``.
        """
        value = self._value(key, default)
        if value is MISSING:
            return default
        if not isinstance(value, list) or (non_empty and not value):
            raise self.wrong(key, expected, value, got=got)
        return value

    def element(
        self, key: str, index: int, *, expected: str | None = None, got: bool = True
    ) -> Self:
        """Return a reader of the mapping at ``key[index]`` (the list was checked by the
        caller, e.g. with ``sequence``). Raises ``KEY[i]: expected EXPECTED, got KIND``
        (without ``got``: ``expected EXPECTED``; EXPECTED defaulting as ``mapping``'s) on the
        item's line for anything else."""
        value = self.data[key][index]
        if not isinstance(value, dict):
            expected = expected or self.mapping_kind()
            raise self.wrong((key, index), expected, value, got=got)
        return self.at(value, (*self.path, key, index))

    @overload
    def items(
        self,
        key: str,
        *,
        expected: str = ...,
        item: str | None = ...,
        non_empty: bool = ...,
        got: bool = ...,
    ) -> Iterator[Self]: ...
    @overload
    def items(
        self,
        key: str,
        *,
        expected: str = ...,
        item: str | None = ...,
        non_empty: bool = ...,
        got: bool = ...,
        default: D,
    ) -> Iterator[Self] | D: ...
    def items(
        self,
        key: str,
        *,
        expected: str = "a list",
        item: str | None = None,
        non_empty: bool = False,
        got: bool = True,
        default: Any = MISSING,
    ) -> Any:
        """Return readers of the mappings listed at ``key``, in order.

        The list itself is checked at once (``sequence``: ``expected``, ``non_empty``); each
        item only when the iteration reaches it (``element``: ``item``), so that the first
        problem in file order is the one reported. ``got`` applies to both messages.
        """
        if default is not MISSING and key not in self.data:
            return default
        count = len(self.sequence(key, expected=expected, non_empty=non_empty, got=got))
        return (self.element(key, i, expected=item, got=got) for i in range(count))
