"""patchlane: gate AI-agent patches with cheap local lanes before a bounded, receipted replay.

PYTEST_DONT_REWRITE: the replay's children import patchlane before pytest starts, and pytest
warns about an installed plugin's package that is already imported (a warning a project's
``filterwarnings = error`` turns into a run that cannot start) unless its docstring holds
this marker. No ``-W`` of patchlane's then overrides the project's own warning filters.
"""

from __future__ import annotations

__version__ = "0.1.0"
