NAME = "c01_module_constant"
# Module-level constant used by a test that never runs a line of the module.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/consts.py": "VAT = 0.2\n\n\ndef gross(x):\n    return x * (1 + VAT)\n",
    "tests/test_a.py": "from pkg.consts import gross\n\n\ndef test_gross():\n    assert gross(0) == 0\n",
    "tests/test_b.py": "from pkg import consts\n\n\ndef test_vat():\n    assert consts.VAT == 0.2\n",
}
PATCH = {"src/pkg/consts.py": BASE["src/pkg/consts.py"].replace("0.2", "0.25")}
