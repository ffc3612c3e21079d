"""``patchlane triage``: gate many candidate patches against one base, sharing the base's work.

``candidates`` turns the command line (refs, diff files, directories of diffs, predictions
JSONL) into named candidates; ``batch`` applies the diffs, obtains what the gates share and
runs them, in parallel on request; ``summary`` writes ``triage.md`` and ``triage.jsonl``.
"""
