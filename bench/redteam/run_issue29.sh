#!/bin/sh
# Issue 29's hostile scenarios (bench/redteam/scenarios/h*.py): each is built from scratch,
# its own plain `python -m pytest` at the head is the truth, and it is gated once with
# --dep-map auto; the table (scenario, truth, verdict, accepted while red) goes to stdout and,
# when given, to the Markdown file $1. The patchlane gated with is whatever `python3 -m
# patchlane` imports: point PYTHONPATH at a checkout's src, e.g.
#   PYTHONPATH=/work/main/src sh bench/redteam/run_issue29.sh /tmp/redteam-before.md
# Work directory: $REDTEAM_DIR (default $TMPDIR/redteam-i29, else /tmp/redteam-i29). Its path
# must not name "patchlane" (h13 tells the replay by its checkout's path); TMPDIR must be
# unset for h08 to be red (it tells the replay by a temporary directory that is not /tmp).
here=$(cd "$(dirname "$0")" && pwd)
unset PATCHLANE_DEP_MAP
REDTEAM_DIR=${REDTEAM_DIR:-${TMPDIR:-/tmp}/redteam-i29}
export REDTEAM_DIR
case "$REDTEAM_DIR" in
*patchlane*)
    echo "run_issue29.sh: REDTEAM_DIR ($REDTEAM_DIR) must not contain 'patchlane'" >&2
    exit 2
    ;;
esac
if [ -n "$1" ]; then
    exec nice -n 10 python3 "$here/issue29.py" --md "$1" "$here"/scenarios/h*.py
fi
exec nice -n 10 python3 "$here/issue29.py" "$here"/scenarios/h*.py
