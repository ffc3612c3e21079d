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


class YamlMap(dict[str, Any]):
    """A mapping that knows its own line and the line of each key (1-based)."""

    line: int
    key_lines: dict[str, int]


class YamlList(list[Any]):
    """A sequence that knows its own line and the line of each item (1-based)."""

    line: int
    item_lines: list[int]


def _construct(node: yaml.Node, loader: yaml.SafeLoader, label: str, error: type[InputError]) -> Any:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out = YamlMap()
        out.line = line
        out.key_lines = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise error(label, "merge keys ('<<') are not allowed", key_node.start_mark.line + 1)
            key = _construct(key_node, loader, label, error)
            key_line = key_node.start_mark.line + 1
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
    except yaml.YAMLError as e:
        raise error(label, f"bad value: {e}", line) from e


def load_yaml(text: str, label: str, error: type[InputError] = InputError) -> Any:
    """Parse one YAML document strictly.

    Returns plain values with ``YamlMap``/``YamlList`` for collections, or ``None`` for an
    empty document. Raises ``error`` naming ``label`` and the line for a syntax error, a
    duplicate key, a non-string key, a merge key, an alias or several documents.
    """
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else None
        raise error(label, f"YAML syntax error: {e.problem or e}", line) from e
    except yaml.YAMLError as e:
        raise error(label, f"YAML error: {e}", None) from e
    finally:
        loader.dispose()
    if node is None:
        return None
    if _has_alias(node, set()):
        raise error(label, "YAML anchors and aliases are not allowed", None)
    return _construct(node, loader, label, error)


def _has_alias(node: yaml.Node, seen: set[int]) -> bool:
    # An alias makes the same node appear twice; refusing them keeps a hostile file from
    # expanding into a billion-laughs structure and keeps every value at one line.
    if id(node) in seen:
        return True
    if isinstance(node, yaml.MappingNode):
        seen.add(id(node))
        return any(_has_alias(k, seen) or _has_alias(v, seen) for k, v in node.value)
    if isinstance(node, yaml.SequenceNode):
        seen.add(id(node))
        return any(_has_alias(v, seen) for v in node.value)
    return False
