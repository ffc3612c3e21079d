"""Reading input files strictly: JSON, YAML, repository paths, typed fields."""
