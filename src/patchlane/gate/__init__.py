"""The gate: classify a patch, run the lanes, read the verdict, write the note."""
