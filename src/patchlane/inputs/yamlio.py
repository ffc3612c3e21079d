"""Strict YAML reading with line numbers, on PyYAML's safe C loader.

PyYAML silently keeps the last of two equal keys, and forgets where a value came from once it
is constructed. We compose the node graph with the C loader, then build plain values
ourselves: mappings become ``YamlMap`` (a dict that remembers the line of each key) and
sequences ``YamlList`` (a list that remembers the line of each item), so that validation can
name the line of whatever it refuses.
"""

from __future__ import annotations

from typing import Any

import yaml

from patchlane.errors import InputError

try:
    _Loader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader


class YamlMap(dict[str, object]):
    """A mapping that knows its own line and the line of each key (1-based)."""

    line: int
    key_lines: dict[str, int]


class YamlList(list[object]):
    """A sequence that knows its own line and the line of each item (1-based)."""

    line: int
    item_lines: list[int]


# Deeper than any review map or freeze registry needs; a hostile file nested a hundred
# thousand levels deep would otherwise crash the C composer (a segfault, not an error).
MAX_DEPTH = 64

# The tags a collection may carry: the plain ones. Anything else (``!!set``, ``!!omap``,
# ``!!python/...``) would be silently read as a plain mapping or list.
_COLLECTION_TAGS = frozenset({"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"})

# What PyYAML's safe constructors raise for a scalar they cannot build (``2026-02-30``,
# ``!!int twelve``, ``!!bool maybe``, ``!!timestamp soon``): never a traceback.
_SCALAR_ERRORS = (yaml.YAMLError, ValueError, TypeError, KeyError, AttributeError, OverflowError)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _construct(
    node: yaml.Node, loader: yaml.SafeLoader, label: str, error: type[InputError]
) -> Any:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode | yaml.SequenceNode) and node.tag not in _COLLECTION_TAGS:
        raise error(label, f"YAML tag {node.tag!r} is not allowed", line)
    if isinstance(node, yaml.MappingNode):
        out = YamlMap()
        out.line = line
        out.key_lines = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise error(label, "merge keys ('<<') are not allowed", key_line)
            key = _construct(key_node, loader, label, error)
            if not isinstance(key, str):
                raise error(label, f"mapping key {key!r} is not a string", key_line)
            if key in out:
                raise error(
                    label,
                    f"duplicate key {key!r} (first on line {out.key_lines[key]})",
                    key_line,
                )
            out[key] = _construct(value_node, loader, label, error)
            out.key_lines[key] = key_line
        return out
    if isinstance(node, yaml.SequenceNode):
        seq = YamlList()
        seq.line = line
        seq.item_lines = []
        for item in node.value:
            seq.append(_construct(item, loader, label, error))
            seq.item_lines.append(item.start_mark.line + 1)
        return seq
    try:
        return loader.construct_object(node, deep=True)
    except _SCALAR_ERRORS as e:
        detail = e.problem if isinstance(e, yaml.MarkedYAMLError) and e.problem else str(e)
        raise error(label, f"bad value: {_one_line(detail)}", line) from e


def _syntax_error(e: yaml.YAMLError, label: str, error: type[InputError]) -> InputError:
    if isinstance(e, yaml.MarkedYAMLError):
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else None
        return error(label, f"YAML syntax error: {_one_line(e.problem or str(e))}", line)
    return error(label, f"YAML error: {_one_line(str(e))}", None)


def _prescan(text: str, label: str, error: type[InputError]) -> None:
    """Walk the event stream (libyaml's parser is iterative) before anything is composed.

    Refuses aliases (a hostile file could expand into a billion-laughs structure, and an
    aliased value would have two lines) and nesting deeper than ``MAX_DEPTH``.
    """
    loader = _Loader(text)
    try:
        depth = 0
        while True:
            event: yaml.Event | None = loader.get_event()  # type: ignore[no-untyped-call]
            if event is None or isinstance(event, yaml.StreamEndEvent):
                return
            line = event.start_mark.line + 1 if event.start_mark is not None else None
            if isinstance(event, yaml.AliasEvent):
                raise error(label, "YAML anchors and aliases are not allowed", line)
            if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise error(label, f"nested more than {MAX_DEPTH} levels deep", line)
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                depth -= 1
    except yaml.YAMLError as e:
        raise _syntax_error(e, label, error) from e
    finally:
        loader.dispose()


def load_yaml(text: str, label: str, error: type[InputError] = InputError) -> Any:
    """Parse one YAML document strictly.

    Returns plain values with ``YamlMap``/``YamlList`` for collections, or ``None`` for an
    empty document. Raises ``error`` naming ``label`` and the line for a syntax error, a
    duplicate key, a non-string key, a merge key, an alias, a value that cannot be built
    (``2026-02-30``), a non-plain collection tag, too deep nesting, several documents, or
    text that is not Unicode (a lone surrogate). The message is always one line.
    """
    try:
        # libyaml takes UTF-8; a str from a strict decode always encodes, but the check is
        # cheap and keeps a UnicodeEncodeError from ever reaching the caller.
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        line = text.count("\n", 0, e.start) + 1
        raise error(label, "not valid Unicode text (a lone surrogate)", line) from None
    _prescan(text, label, error)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.YAMLError as e:
        raise _syntax_error(e, label, error) from e
    finally:
        loader.dispose()
    if node is None:
        return None
    return _construct(node, loader, label, error)


def line_at(root: Any, path: tuple[str | int, ...]) -> int:
    """Return the line of the value at ``path`` below ``root`` (from ``load_yaml``): the
    line of its last key (``lanes:`` for ``("lanes",)``) or list item, of its nearest
    existing parent when the path is missing, and where ``root`` starts (1 for a scalar
    document) for the empty path."""
    node: object = root
    line: int = getattr(root, "line", 1)
    for part in path:
        if isinstance(node, YamlMap) and isinstance(part, str) and part in node:
            line = node.key_lines[part]
            node = node[part]
        elif isinstance(node, YamlList) and isinstance(part, int) and 0 <= part < len(node):
            line = node.item_lines[part]
            node = node[part]
        else:
            break
    return line
