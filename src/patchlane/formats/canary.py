"""The canary's setting and its record in a replay report (the drawing is the replay lane's:
``lanes.replay.canary``).

The canary: a random sample of the suite outside the slice, run and judged with it.

Selection says which tests a patch can reach; a patch that knows those rules could break a
test they do not select. So besides the slice the replay runs a sample of the other tests,
drawn from ``os.urandom`` after the patch is fixed (never from the public ``--seed`` a patch
could be tuned to), so that no patch can know which of them will run
(docs/architecture.md §4, "Replay slice"). The canary's node ids are slice lines like any
other: the slice's hash binds them, the receipt must cover them, and a failure there rejects.

Its size is ``max(ceil(share * outside), min)``, capped at what there is, where ``outside``
is the number of the suite's tests not in the slice (``replay.canary`` in the review map;
``share: 0.05, min: 20`` by default, ``canary: off`` for none). Where the map says nothing,
``PATCHLANE_CANARY=off`` in the user's environment turns the default off (the test suite of
patchlane does, as it does ``PATCHLANE_DEP_MAP``); the note says which setting ran.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from patchlane.inputs.fields import Fields

REASON = "canary: drawn at random from the tests outside the slice"
RULE = "canary"
DEFAULT_SHARE = 0.05
DEFAULT_MIN = 20
ENV = "PATCHLANE_CANARY"
# Where a setting came from, as the note and the reports name it.
DEFAULT_SOURCE, MAP_SOURCE, ENV_SOURCE = "default", "review map", f"{ENV}=off"
SOURCES = (DEFAULT_SOURCE, MAP_SOURCE, ENV_SOURCE)


@dataclass(frozen=True)
class CanarySetting:
    """``replay.canary`` of the review map: the share of the tests outside the slice to
    draw, and the least number of them (both 0: no canary)."""

    share: float = DEFAULT_SHARE
    min: int = DEFAULT_MIN
    source: str = DEFAULT_SOURCE

    @property
    def off(self) -> bool:
        """Whether the setting draws no test at all."""
        return self.share == 0 and self.min == 0

    def size(self, outside: int) -> int:
        """Return how many of ``outside`` tests to draw (never more than there are)."""
        return min(outside, max(math.ceil(self.share * outside), self.min))


@dataclass(frozen=True)
class Canary:
    """The drawn sample (sorted node ids), how many tests were outside the slice, and the
    setting that sized it."""

    nodeids: tuple[str, ...]
    outside: int
    setting: CanarySetting

    def note_line(self) -> str:
        """Return the note's one line about the canary."""
        if self.setting.off:
            where = "replay.canary in the review map"
            if self.setting.source == ENV_SOURCE:
                where = f"{ENV_SOURCE} in the environment, the map sets no replay.canary"
            return f"canary: off ({where}): no test outside the slice ran"
        return (
            f"canary: {len(self.nodeids)} of {self.outside} tests outside the slice, "
            "drawn at random"
        )

    def to_json(self) -> dict[str, object]:
        """Return ``{count, outside, share, min, source, nodeids}`` (``share`` and ``min``
        0: off)."""
        return {
            "count": len(self.nodeids),
            "outside": self.outside,
            "share": self.setting.share,
            "min": self.setting.min,
            "source": self.setting.source,
            "nodeids": list(self.nodeids),
        }

    @classmethod
    def parse(cls, item: Fields) -> Canary:
        """Read what ``to_json`` wrote. Raises the document's ``InputError`` for a missing
        or mistyped field, or a ``count`` that is not the number of ``nodeids``."""
        item.only(("count", "min", "nodeids", "outside", "share", "source"))
        nodeids = item.text_list("nodeids", item=None)
        if item.integer("count", lo=0) != len(nodeids):
            raise item.fail("count", f"is not the number of nodeids ({len(nodeids)})")
        setting = CanarySetting(
            item.number("share", lo=0, hi=1),
            item.integer("min", lo=0),
            item.choice("source", SOURCES),
        )
        return cls(tuple(nodeids), item.integer("outside", lo=0), setting)


def _read(top: Fields, key: str) -> Canary:
    return Canary.parse(top.mapping(key))


# The canary as a key of a format declared as a model (``inputs.model``): ``Canary``'s own
# reader, writer and schema, since its record is not its fields (``count`` is derived, the
# setting is written flat); splat it into a ``spec`` with the key's other settings.
CANARY_KEY: dict[str, object] = {
    "read": _read,
    "dump": Canary.to_json,
    "schema": {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 0},
            "outside": {"type": "integer", "minimum": 0},
            "share": {"type": "number", "minimum": 0, "maximum": 1},
            "min": {"type": "integer", "minimum": 0},
            "source": {"enum": list(SOURCES)},
            "nodeids": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["count", "outside", "share", "min", "source", "nodeids"],
        "additionalProperties": False,
    },
}
