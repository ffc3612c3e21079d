"""patchlane: gate AI-agent patches with cheap local lanes before a bounded, receipted replay."""

from __future__ import annotations

__version__ = "0.1.0"
