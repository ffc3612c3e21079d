NAME = "c13_new_module"
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/calc.py": "def area(w, h):\n    return w * h\n",
    "tests/test_calc.py": "from pkg.calc import area\n\n\ndef test_area():\n    assert area(2, 3) == 6\n",
}
PATCH = {
    "src/pkg/calc.py": "def area(w, h):\n    from pkg import _checks\n    _checks.positive(w, h)\n    return w * h\n",
    "src/pkg/_checks.py": "def positive(*xs):\n    if any(x <= 2 for x in xs):\n        raise ValueError(xs)\n",
}
