"""A file format declared once: a frozen dataclass is the model, and its writer, its strict
reader and its JSON Schema are derived from it (docs/architecture.md §4).

A model's fields say everything the three need. Their types give the JSON kind (``str``,
``int``, ``float``, ``bool``, a calendar ``date``, a ``StrEnum``, a ``Literal`` of strings,
another model, a ``tuple[T, ...]`` of any of these or a ``Mapping[str, T]`` of the scalars,
each optionally ``| None``). Their defaults say what an absent key reads as, and an optional ``spec(...)``
in the field's metadata says the rest (``Spec``): a description for the schema, a lower
bound, when the key is written, what an absent key reads as when that differs from the
constructor's default, and, for the rare key whose shape no type says, its own reader,
writer and schema::

    @dataclass(frozen=True)
    class Timings:
        seconds: float = 0.0
        hashed: int = field(default=0, metadata=spec(lo=0))

    to_data(Timings(1.5, 3))             # {"seconds": 1.5, "hashed": 3}
    from_fields(Timings, fields)         # unknown keys refused, each value type-checked
    schema_of(Timings)                   # {"type": "object", "properties": ..., ...}

A check across fields (a stamp before another, a flag that needs a listed item) is the
model's own: a model that defines ``check_read(self, top)`` has it called with the reader of
its object once every field is read, and raises ``top.fail(...)`` for what no field's type
says (``Checked``); what of it JSON Schema can say, the model's ``SCHEMA_ACROSS`` (a
class variable: keywords such as ``not``/``anyOf`` over its keys) adds to its schema.

Reading goes through ``inputs.fields``, the one reader every input uses, so each refusal
keeps the document's ``FILE:LINE`` and wording. The models are read once per class
(``typing.get_type_hints``) and cached. Only the standard library and ``inputs.fields`` are
imported: the pytest plugin reads the freeze report with this inside pytest children.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from patchlane.inputs.fields import Fields

# The vocabulary models are declared in, by the names every format imports from here.
from patchlane.inputs.modelspec import SPEC as _SPEC
from patchlane.inputs.modelspec import UNSET as _UNSET
from patchlane.inputs.modelspec import Checked as Checked
from patchlane.inputs.modelspec import Group as Group
from patchlane.inputs.modelspec import Reader as Reader
from patchlane.inputs.modelspec import Spec as Spec
from patchlane.inputs.modelspec import spec as spec

M = TypeVar("M")
_NONE: Any = type(None)
# A field's reader by its type, given the resolved field.
TypedReader = Callable[["_Field", Fields], object]


@dataclass(frozen=True)
class _Field:
    """One field of a model, resolved: its key, type (``None`` stripped), whether ``null``
    is a value, what an absent key reads as (``_UNSET``: required), and its ``Spec``."""

    name: str
    kind: Any
    nullable: bool
    absent: object
    spec: Spec
    init: bool = True
    # The default's factory: each read gets a value of its own.
    factory: Callable[[], object] | None = None
    # How its type is read (``_reader_for``), chosen once when the model is resolved.
    typed: TypedReader | None = None

    @property
    def key(self) -> str:
        """The field's key in the file: ``Spec.key``, else its name."""
        return self.spec.key or self.name

    def absent_value(self) -> object:
        """What an absent key reads as (``_UNSET``: the key is required)."""
        return self.factory() if self.factory is not None else self.absent


# Each model's fields, resolved the first time the model is used.
_RESOLVED: dict[type, tuple[_Field, ...]] = {}


def model_fields(model: type) -> tuple[_Field, ...]:
    """Return the resolved fields of the dataclass ``model``, in declaration order. Raises
    ``TypeError`` for a class that is not a dataclass."""
    if model in _RESOLVED:
        return _RESOLVED[model]
    hints = typing.get_type_hints(model)
    resolved = []
    for f in dataclasses.fields(model):
        kind = hints[f.name]
        args = typing.get_args(kind)
        given: Spec = f.metadata.get(_SPEC, Spec())
        if given.local:
            continue
        nullable = _is_union(kind) and _NONE in args
        if nullable:
            rest = tuple(a for a in args if a is not _NONE)
            kind = rest[0] if len(rest) == 1 else typing.Union[rest]  # noqa: UP007
            nullable = given.null
        absent, factory = given.absent, None
        if given.required:
            absent = _UNSET
        elif absent is _UNSET and f.default is not dataclasses.MISSING:
            absent = f.default
        elif absent is _UNSET and f.default_factory is not dataclasses.MISSING:
            absent, factory = None, f.default_factory
        typed = _reader_for(kind)
        _check_declaration(model, f.name, kind, given, readable=typed is not None)
        resolved.append(_Field(f.name, kind, nullable, absent, given, f.init, factory, typed))
    _RESOLVED[model] = tuple(resolved)
    return _RESOLVED[model]


def _check_declaration(model: type, name: str, kind: Any, given: Spec, *, readable: bool) -> None:
    """Raise ``TypeError`` for a field no reader can read or whose ``Spec`` cannot hold:
    a model is refused when first used, not when a file first holds the key."""
    where = f"{model.__name__}.{name}"
    if given.write not in ("always", "nonempty", "notnone") and not callable(given.write):
        raise TypeError(f"{where}: write must be always, nonempty, notnone or a function")
    if given.when is not None and given.when not in {f.name for f in dataclasses.fields(model)}:
        raise TypeError(f"{where}: when names no field: {given.when!r}")
    if given.read is None and not readable:
        raise TypeError(f"{where}: no reader for {kind!r}; give the field a Spec.read")


def keys(model: type) -> tuple[str, ...]:
    """Return the keys of ``model``'s fields, in declaration order: the keys of its
    format for a model without groups (a group's keys sit inside its object)."""
    return tuple(f.key for f in model_fields(model))


def required_keys(model: type) -> tuple[str, ...]:
    """Return the keys a file of ``model`` must hold (outside any group), in declaration
    order."""
    return tuple(f.key for f in model_fields(model) if f.spec.group is None and f.absent is _UNSET)


def _is_union(kind: Any) -> bool:
    return typing.get_origin(kind) in (typing.Union, types.UnionType)


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and dataclasses.is_dataclass(kind)


def _values_of(kind: Any) -> Any | None:
    """The value type of ``Mapping[str, T]``, else ``None``."""
    args = typing.get_args(kind)
    if typing.get_origin(kind) is Mapping and len(args) == 2 and args[0] is str:
        return args[1]
    return None


def _items_of(kind: Any) -> Any | None:
    """The item type of ``tuple[T, ...]``, else ``None``."""
    args = typing.get_args(kind)
    if typing.get_origin(kind) is tuple and len(args) == 2 and args[1] is Ellipsis:
        return args[0]
    return None


# --- writing --------------------------------------------------------------------------------


def to_data(value: object, head: Mapping[str, object] | None = None) -> dict[str, object]:
    """Return the model instance ``value`` as JSON-ready data: ``head``'s keys first, then
    every field's key in declaration order, as each field's ``Spec`` says to write it."""
    data: dict[str, object] = dict(head or {})
    for f in model_fields(type(value)):
        item = getattr(value, f.name)
        if not _written(f, item, value):
            continue
        plain = f.spec.dump(item) if f.spec.dump is not None else _plain(item)
        if f.spec.group is None:
            data[f.key] = plain
        else:
            group = data.setdefault(f.spec.group.name, {})
            assert isinstance(group, dict)  # noqa: S101 - set just above, never from input
            group[f.key] = plain
    return data


def _written(f: _Field, item: object, value: object) -> bool:
    if f.spec.when is not None and getattr(value, f.spec.when) is None:
        return False
    if callable(f.spec.write):
        return f.spec.write(value)
    if f.spec.write == "nonempty":
        return bool(item)
    return f.spec.write != "notnone" or item is not None


def _plain(value: object) -> object:
    """A field's value as JSON data: an enum member its value, a tuple a list, a mapping or
    a model an object."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_data(value)
    return value


# --- reading --------------------------------------------------------------------------------


def from_fields(
    model: type[M],
    top: Fields,
    *,
    given: Mapping[str, object] | None = None,
    extra: tuple[str, ...] = (),
) -> M:
    """Return the ``model`` instance that the mapping ``top`` holds.

    Every key must be one of ``extra`` (keys the caller reads itself, named first in the
    refusal's list) or of the model's (a group's keys inside its object); each field is
    read with the ``Fields`` getter its type calls for, except the ones ``given``
    supplies; then a ``Checked`` model's ``check_read``. Raises the document's error
    (``FILE:LINE: FIELD: what is wrong``) for an unknown key, a missing required one, a
    value of the wrong type or range, or what ``check_read`` refuses.
    """
    fields = model_fields(model)
    top.only(tuple(dict.fromkeys((*extra, *(_top_key(f) for f in fields)))))
    within: dict[str, Fields | None] = {}
    for f in fields:
        if f.spec.group is not None and f.spec.group.name not in within:
            group = top.mapping(f.spec.group.name, default=None)
            members = tuple(m.key for m in fields if m.spec.group == f.spec.group)
            within[f.spec.group.name] = None if group is None else group.only(members)
    values = dict(given or {})
    for f in fields:
        if f.name in values:
            continue
        reader = top if f.spec.group is None else within[f.spec.group.name]
        if reader is None and f.spec.group is not None and f.spec.group.optional:
            continue  # no object: the constructor's default
        if reader is None and f.absent is _UNSET and f.spec.group is not None:
            top.require(f.spec.group.name)  # its object holds a required key
        value = f.absent_value() if reader is None else _read(f, reader)
        if f.init:
            values[f.name] = value
    read = model(**values)
    if isinstance(read, Checked):
        read.check_read(top)
    return read


def _top_key(f: _Field) -> str:
    return f.key if f.spec.group is None else f.spec.group.name


def _read(f: _Field, top: Fields) -> object:
    """The value of one field: absent, null, a custom reader's, or its type's getter's."""
    if f.key not in top.data:
        if f.absent is _UNSET:
            top.require(f.key)
        return f.absent_value()
    if f.nullable and top.get(f.key) is None:
        return None
    if f.spec.read is not None:
        return f.spec.read(top, f.key)
    assert f.typed is not None  # noqa: S101 - _check_declaration refused a field without
    # The getters name the key: a field whose key is not its name is read under its key.
    return f.typed(f if f.spec.key is None else dataclasses.replace(f, name=f.key), top)


def _reader_for(kind: Any) -> TypedReader | None:
    """How a value of ``kind`` is read, or ``None`` when no getter reads it."""
    if kind is Any:
        return lambda f, top: top.get(f.name)
    if kind is bool:
        return lambda f, top: top.boolean(f.name)
    if kind is datetime.date:
        return lambda f, top: top.date(f.name)
    if kind in (int, float):
        return _read_number
    if kind is str:
        return _read_string
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return lambda f, top: f.kind(top.choice(f.name, tuple(m.value for m in f.kind)))
    if typing.get_origin(kind) is Literal:
        return lambda f, top: top.choice(f.name, typing.get_args(f.kind))
    if _is_model(kind):
        return lambda f, top: from_fields(f.kind, top.mapping(f.name))
    values = _values_of(kind)
    if values in (bool, int, float, str):
        return _mapping_reader(values)
    item = _items_of(kind)
    if item is str:
        return _read_strings
    if item in (int, float):
        return _read_numbers
    if item is not None and _is_model(item):
        return lambda f, top: tuple(from_fields(item, entry) for entry in top.items(f.name))
    return None


def _read_number(f: _Field, top: Fields) -> float:
    name, null = f.name, f.nullable
    if f.kind is int:
        lo = None if f.spec.lo is None else math.ceil(f.spec.lo)
        hi = None if f.spec.hi is None else math.floor(f.spec.hi)
        expected = f.spec.expected or ("an integer or null" if null else "an integer")
        number: float = top.integer(name, lo=lo, hi=hi, expected=expected)
    else:
        expected = f.spec.expected or ("a number or null" if null else "a number")
        number = top.number(name, lo=f.spec.lo, hi=f.spec.hi, expected=expected)
    if f.spec.above is not None and number <= f.spec.above:
        raise top.wrong(name, f"a number above {f.spec.above:g}", number)
    return number


def _read_strings(f: _Field, top: Fields) -> object:
    given = f.spec
    checked = given.checks_text() or given.duplicate is not None
    # A ``check`` words what the pattern refuses: the pattern is then the schema's only.
    accept = given.accepts if given.check is None else given.accept
    return top.text_list(
        f.name,
        expected=given.expected or "a list of strings",
        item=given.item,
        accept=accept if checked else None,
        check=given.check,
        duplicate=given.duplicate,
    )


def _read_numbers(f: _Field, top: Fields) -> object:
    """A list of numbers (``int``: not ``true``), each within the field's bounds, each once
    when ``duplicate`` is given: else ``FIELD: expected EXPECTED`` for the whole list."""
    item = _items_of(f.kind)
    value = top.sequence(f.name, expected=f.spec.expected or "a list of numbers")
    given = f.spec
    for number in value:
        if (
            isinstance(number, bool)
            or not isinstance(number, int if item is int else int | float)
            or (given.lo is not None and number < given.lo)
            or (given.hi is not None and number > given.hi)
            or (given.duplicate is not None and value.count(number) > 1)
        ):
            raise top.wrong(f.name, given.expected or "a list of numbers", value)
    return tuple(value)


def _read_string(f: _Field, top: Fields) -> object:
    if f.spec.choices is not None:
        return top.choice(f.name, f.spec.choices)
    if f.spec.checks_text():
        expected = f.spec.expected or "a string"
        # A ``check`` words what the pattern refuses: the pattern is then the schema's only.
        accept = f.spec.accepts if f.spec.check is None else f.spec.accept
        return top.text(f.name, expected=expected, accept=accept, check=f.spec.check)
    # ``null`` was read already: here it only words the refusal ("a string or null").
    return top.string(f.name, null=True) if f.nullable else top.string(f.name)


def _mapping_reader(values: Any) -> TypedReader:
    """A ``Mapping[str, values]``'s reader: each value is read as a field of its own, so
    its refusal names ``KEY.NAME`` and the key's bounds hold for it."""
    read_value = _reader_for(values)
    assert read_value is not None  # noqa: S101 - a scalar, which every branch reads

    def read(f: _Field, top: Fields) -> object:
        mapping = top.mapping(f.name)
        bounds = Spec(lo=f.spec.lo, hi=f.spec.hi, above=f.spec.above)
        each = _Field(f.name, values, False, _UNSET, bounds)
        return {k: read_value(dataclasses.replace(each, name=k), mapping) for k in mapping.data}

    return read


# --- describing -----------------------------------------------------------------------------


def schema_parts(model: type) -> tuple[dict[str, dict[str, object]], list[str]]:
    """Return the JSON Schema of each of ``model``'s keys, by key in declaration order (a
    group's object in the place of its first key), and the keys a file must have."""
    properties: dict[str, dict[str, object]] = {}
    required: list[str] = []
    for f in model_fields(model):
        if f.spec.group is None:
            properties[f.key] = _property(f)
            required += [f.key] if f.absent is _UNSET else []
            continue
        group = properties.setdefault(f.spec.group.name, _group_schema(f.spec.group))
        members = group["properties"]
        assert isinstance(members, dict)  # noqa: S101 - made by _group_schema
        members[f.key] = _property(f)
        if f.absent is _UNSET:
            group["required"] = [*_names(group.get("required")), f.key]
            optional = f.spec.group.optional or f.spec.group.name in required
            required += [] if optional else [f.spec.group.name]
    return properties, required


def _names(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def schema_of(model: type) -> dict[str, object]:
    """Return the JSON Schema (draft 2020-12) of ``model``'s objects: every key described by
    its type and ``Spec``, the required ones listed, any other key refused."""
    properties, required = schema_parts(model)
    schema: dict[str, object] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    schema.update(getattr(model, "SCHEMA_ACROSS", {}))
    return schema


def _group_schema(group: Group) -> dict[str, object]:
    schema: dict[str, object] = {"type": "object", "properties": {}}
    schema["additionalProperties"] = False
    if group.description is not None:
        schema["description"] = group.description
    return schema


def _property(f: _Field) -> dict[str, object]:
    if f.spec.schema is not None:
        schema = dict(f.spec.schema)
    elif f.kind is Any:
        schema = {}
    else:
        schema = _kind_schema(f.kind, f.spec)
    if f.nullable:
        schema = _with_null(schema)
    if f.spec.description is not None:
        schema["description"] = f.spec.description
    return schema


def _kind_schema(kind: Any, given: Spec) -> dict[str, object]:
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if kind is str and given.choices is not None:
        return {"enum": list(given.choices)}
    if kind in simple:
        schema: dict[str, object] = {"type": simple[kind]}
        if kind is str and given.pattern is not None:
            schema["pattern"] = given.pattern
        if given.lo is not None and kind in (int, float):
            schema["minimum"] = math.ceil(given.lo) if kind is int else given.lo
        if given.hi is not None and kind in (int, float):
            schema["maximum"] = math.floor(given.hi) if kind is int else given.hi
        if given.above is not None and kind in (int, float):
            schema["exclusiveMinimum"] = given.above
        return schema
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return {"enum": [m.value for m in kind]}
    if kind is datetime.date:
        # A YAML date (``2026-10-08``) is read as the text it is written as.
        return {"type": "string", "format": "date", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
    if typing.get_origin(kind) is Literal:
        return {"enum": list(typing.get_args(kind))}
    if _is_model(kind):
        return schema_of(kind)
    values = _values_of(kind)
    if values is not None:
        bounds = Spec(lo=given.lo, hi=given.hi, above=given.above)
        return {"type": "object", "additionalProperties": _kind_schema(values, bounds)}
    item = _items_of(kind)
    if item is not None:
        # A list's bounds and pattern are its items'.
        each = Spec(pattern=given.pattern, lo=given.lo, hi=given.hi, above=given.above)
        array: dict[str, object] = {"type": "array", "items": _kind_schema(item, each)}
        if given.duplicate is not None:
            array["uniqueItems"] = True
        return array
    args = typing.get_args(kind)
    if typing.get_origin(kind) is tuple and args and all(a is args[0] for a in args):
        n = len(args)
        return {
            "type": "array",
            "items": _kind_schema(args[0], Spec()),
            "minItems": n,
            "maxItems": n,
        }
    raise TypeError(f"no schema for {kind!r}; give the field a Spec.schema")


def _with_null(schema: dict[str, object]) -> dict[str, object]:
    """``schema`` that also takes ``null``."""
    if "enum" in schema and isinstance(schema["enum"], list):
        return {**schema, "enum": [*schema["enum"], None]}
    if isinstance(schema.get("type"), str):
        return {**schema, "type": [schema["type"], "null"]}
    return {"anyOf": [schema, {"type": "null"}]}
