"""Reporting a gate's evidence to CI systems (``python -m patchlane.ci.github``)."""
