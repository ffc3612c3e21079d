NAME = "c02_default_arg"
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/fmt.py": "def money(x, places=2):\n    return f'{x:.{places}f}'\n",
    "tests/test_a.py": "from pkg.fmt import money\n\n\ndef test_explicit():\n    assert money(1, 1) == '1.0'\n",
    "tests/test_b.py": "import inspect\n\nfrom pkg.fmt import money\n\n\ndef test_default_places():\n    assert inspect.signature(money).parameters['places'].default == 2\n",
}
PATCH = {"src/pkg/fmt.py": BASE["src/pkg/fmt.py"].replace("places=2", "places=3")}
