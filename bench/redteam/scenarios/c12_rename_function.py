NAME = "c12_rename_function"
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/ops.py": "def total(xs):\n    return sum(xs)\n",
    "src/pkg/report.py": "def render(xs):\n    from pkg.ops import total\n    return f'total={total(xs)}'\n",
    "tests/test_ops.py": "from pkg.ops import total\n\n\ndef test_total():\n    assert total([1]) == 1\n",
    "tests/test_report.py": "from pkg.report import render\n\n\ndef test_render():\n    assert render([1, 2]) == 'total=3'\n",
}
PATCH = {
    "src/pkg/ops.py": "def sum_all(xs):\n    return sum(xs)\n\n\ntotal = sum_all\n",
    "src/pkg/report.py": "def render(xs):\n    from pkg.ops import sum_al\n    return f'total={sum_al(xs)}'\n",
}
