NAME = "c08_init_subclass"
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/base.py": """REGISTRY = {}


class Plugin:
    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        REGISTRY[cls.__name__.lower()] = cls
""",
    "src/pkg/plugins.py": "from pkg.base import Plugin\n\n\nclass Csv(Plugin):\n    pass\n",
    "tests/test_reg.py": "import pkg.plugins  # noqa: F401\nfrom pkg.base import REGISTRY\n\n\ndef test_csv_registered():\n    assert 'csv' in REGISTRY\n",
}
PATCH = {"src/pkg/base.py": BASE["src/pkg/base.py"].replace("cls.__name__.lower()", "cls.__name__")}
