#!/bin/sh
# Rebuild and rerun every red-team scenario of the dependency map (docs/decisions.md, "Issue 11").
# Each builds $REDTEAM_DIR/runs/NAME/repo (default $TMPDIR/redteam-map) from scratch, with its
# own fresh --dep-cache, and gates it with --dep-map auto and off.
here=$(cd "$(dirname "$0")" && pwd)
unset PATCHLANE_DEP_MAP
python3 "$here/harness.py" "$here"/scenarios/s*.py "$here"/scenarios/c*.py "$here"/scenarios/r*.py
sh "$here/scenarios/s99_cache_poison.sh"
