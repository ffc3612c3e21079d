"""Fixtures of these tests: ``load`` (tests/loader.py)."""

from tests.loader import Loader, load

__all__ = ["Loader", "load"]
