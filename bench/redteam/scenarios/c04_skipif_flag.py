NAME = "c04_skipif_flag"
# skipif(project.flag()) evaluated at import; the patch flips the flag so a test that was
# skipped at the base now runs (and fails).
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/flags.py": "def legacy_enabled():\n    return False\n\n\ndef legacy_total(xs):\n    return sum(xs) + 1\n",
    "tests/test_a.py": "from pkg.flags import legacy_enabled\n\n\ndef test_flag_is_bool():\n    assert legacy_enabled() in (True, False)\n",
    "tests/test_legacy.py": """import pytest

from pkg import flags


@pytest.mark.skipif(not flags.legacy_enabled(), reason="legacy off")
def test_legacy_total():
    assert flags.legacy_total([1, 2]) == 3
""",
}
PATCH = {
    "src/pkg/flags.py": BASE["src/pkg/flags.py"].replace("    return False", "    return True")
}
