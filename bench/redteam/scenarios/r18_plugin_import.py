NAME = "r18_plugin_import"
# The changed function imports, at the head, a project module no base test imported
# (pkg.legacy, unchanged); its import-time code overrides an entry of another module's
# registry. The map's first-importer rule reads the BASE's first imports only.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/formats.py": """FORMATS = {"csv": ","}


def separator(name):
    return FORMATS[name]
""",
    "src/pkg/legacy.py": """from pkg.formats import FORMATS

FORMATS["csv"] = ";"
""",
    "src/pkg/loader.py": """from pkg.formats import separator


def load(text, fmt="csv"):
    return text.split(separator(fmt))
""",
    "tests/test_a_load.py": """from pkg.loader import load


def test_load_splits():
    assert len(load("a,b")) >= 1
""",
    "tests/test_b_sep.py": """from pkg import loader
from pkg.formats import separator


def test_csv_is_comma():
    assert separator("csv") == ","
""",
}
PATCH = {
    "src/pkg/loader.py": BASE["src/pkg/loader.py"].replace(
        "    return text.split(separator(fmt))\n",
        "    if fmt == \"csv\":\n        import pkg.legacy  # noqa: F401 - dialects\n    return text.split(separator(fmt))\n",
    ),
}
