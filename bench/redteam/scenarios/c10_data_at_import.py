NAME = "c10_data_at_import"
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/limits.json": '{"max": 10}\n',
    "src/pkg/limits.py": "import json\nfrom pathlib import Path\n\nLIMITS = json.loads((Path(__file__).parent / 'limits.json').read_text())\n",
    "tests/test_limits.py": "from pkg.limits import LIMITS\n\n\ndef test_max():\n    assert LIMITS['max'] == 10\n",
}
PATCH = {"src/pkg/limits.json": '{"max": 11}\n'}
