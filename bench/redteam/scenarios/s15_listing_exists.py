NAME = "s15_listing_exists"
# An added data file: the test that lists the data directory (a "all data files are valid"
# test) is selected; the behaviour that checks os.path.exists (no audit event) is not.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/data/base.json": '{"currency": "EUR"}\n',
    "src/pkg/settings.py": """import json
from pathlib import Path

DATA = Path(__file__).parent / "data"


def load():
    out = json.loads((DATA / "base.json").read_text())
    override = DATA / "overrides.json"
    if override.exists():
        out.update(json.loads(override.read_text()))
    return out
""",
    "tests/test_a_data_valid.py": """import json

from pkg.settings import DATA


def test_every_data_file_is_json():
    for path in DATA.glob("*.json"):
        assert isinstance(json.loads(path.read_text()), dict)
""",
    "tests/test_b_settings.py": """from pkg.settings import load


def test_currency():
    assert load()["currency"] == "EUR"
""",
}
PATCH = {"src/pkg/data/overrides.json": '{"currency": "USD"}\n'}
