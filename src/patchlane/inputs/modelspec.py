"""The vocabulary a format's model is declared in (``inputs.model``): ``Spec``, what a field's
type and default do not say about its key (``spec(...)`` in the field's metadata), ``Group``,
an object of the file holding some of the fields, and ``Checked``, a model with a check across
its fields. Split from ``inputs.model``, which re-exports each name; only the standard
library and ``inputs.fields`` are imported (the pytest plugin reads a model in pytest
children).
"""

from __future__ import annotations

import enum
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from patchlane.inputs.fields import Fields

# The key of a field's metadata that holds its ``Spec``.
SPEC = "patchlane"


class Absent(enum.Enum):
    ABSENT = enum.auto()


# A ``Spec.absent`` that was not given: the field's default, if any, is what an absent key
# reads as; with no default the key is required.
UNSET: Literal[Absent.ABSENT] = Absent.ABSENT

Reader = Callable[[Fields, str], object]


@dataclass(frozen=True)
class Group:
    """An object of the file that holds some of a model's fields as its keys (a report's
    ``timings``), in the place of the first of them; ``description`` goes into the schema.

    A group whose object is ``optional`` may be left out even where it holds required keys:
    its fields then keep their constructor defaults (``classify.json``'s ``map``)."""

    name: str
    description: str | None = None
    optional: bool = False


@typing.runtime_checkable
class Checked(typing.Protocol):
    """A model with a check across its fields, run when it is read (``from_fields``)."""

    def check_read(self, top: Fields) -> None:
        """Raise ``top.fail(...)`` (the document's error) for what the fields read from the
        object ``top`` say together and no field's type refuses alone."""


@dataclass(frozen=True)
class Spec:
    """What a field's type and default do not say about its key.

    Writing: ``write`` is ``always``, ``nonempty`` (left out when the value is empty or
    none), ``notnone`` (left out when it is ``None``: an empty value is written) or a
    function of the model instance that says whether to write the key; ``when`` names
    another field: the key is written only when that field is not ``None``; ``group`` puts
    the key inside an object of the file; ``dump`` replaces the derived writer; ``key`` is
    the key in the file where it is not the field's name; a ``local`` field is no key at all
    (where a record starts in its file: the reader passes it in ``given``).

    Reading: ``absent`` is what an absent key reads as, where the constructor's default is
    not that (or where the field has none and the file may still leave the key out);
    ``required`` makes the key required even where the constructor has a default;
    ``null=False`` refuses ``null`` for a field whose ``None`` only stands for an absent
    key; ``lo``, ``hi`` and ``above`` bound a number (at least, at most, more than; of each value, for a
    mapping); ``choices`` are the strings a ``str`` field may hold; ``item`` words a refused
    item of a list of strings (``None``: the whole list is refused); ``read`` replaces the
    derived reader.

    A string (or each string of a list) may be checked further: ``pattern`` (a regular
    expression the whole string must match, ``^...$``, written into the schema too), ``accept`` (a predicate that
    must hold, where a pattern cannot say it all), ``check`` (a function returning the
    problem, raised as it says; where one is given, it words what ``pattern`` refuses, and
    the pattern is the schema's only) and, for a list, ``duplicate`` (the message for an item
    listed twice: ``"node id {!r} is listed twice"``; ``uniqueItems`` in the schema);
    ``expected`` words the refusal (``FIELD: expected EXPECTED, got KIND``).

    Describing: ``description`` goes into the schema; ``schema`` replaces the derived one
    (for a key whose shape the type does not say). A field with ``init=False`` (one the
    model computes) is written and its value checked when read, but never passed on.
    """

    description: str | None = None
    lo: float | None = None
    hi: float | None = None
    above: float | None = None
    write: Literal["always", "nonempty", "notnone"] | Callable[[Any], bool] = "always"
    when: str | None = None
    group: Group | None = None
    absent: object = UNSET
    required: bool = False
    null: bool = True
    choices: tuple[str, ...] | None = None
    item: str | None = "a string"
    read: Reader | None = None
    dump: Callable[[Any], object] | None = None
    schema: Mapping[str, object] | None = None
    key: str | None = None
    local: bool = False
    pattern: str | None = None
    accept: Callable[[str], object] | None = None
    check: Callable[[str], str | None] | None = None
    expected: str | None = None
    duplicate: str | None = None

    def checks_text(self) -> bool:
        """Whether a string is checked beyond its type (``Fields.text``'s reading)."""
        return any(x is not None for x in (self.pattern, self.accept, self.check, self.expected))

    def accepts(self, value: str) -> bool:
        """Whether ``value`` matches ``pattern`` and passes ``accept`` (each if given)."""
        if self.pattern is not None and re.fullmatch(self.pattern, value) is None:
            return False
        return self.accept is None or bool(self.accept(value))


def spec(**settings: Any) -> dict[str, Spec]:
    """Return a field's metadata holding ``Spec(**settings)``, for ``field(metadata=...)``.
    Raises ``TypeError`` for a setting ``Spec`` does not have."""
    return {SPEC: Spec(**settings)}
