"""The facts the classification hands the verdict, by the name the gate and the lanes import
them under. They are declared with the format that carries them, ``classify.json``
(``formats.facts``); this module only names them here."""

from __future__ import annotations

from patchlane.formats.facts import BLOCKING_KINDS, HARNESS, REPLAY_COMMAND, PatchFacts

__all__ = ["BLOCKING_KINDS", "HARNESS", "REPLAY_COMMAND", "PatchFacts"]
