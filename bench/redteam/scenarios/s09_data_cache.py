NAME = "s09_data_cache"
# A data file loaded lazily and cached: only the first test that needs it opens it.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/config.json": '{"timeout": 30, "retries": 3}\n',
    "src/pkg/config.py": """import json
from pathlib import Path

_CONFIG = None


def config():
    global _CONFIG
    if _CONFIG is None:
        _CONFIG = json.loads((Path(__file__).parent / "config.json").read_text())
    return _CONFIG


def timeout():
    return config()["timeout"]
""",
    "tests/test_a_config.py": """from pkg.config import config


def test_config_keys():
    assert {"timeout", "retries"} <= set(config())
""",
    "tests/test_b_timeout.py": """from pkg.config import timeout


def test_timeout():
    assert timeout() == 30
""",
}
PATCH = {"src/pkg/config.json": '{"timeout": 60, "retries": 3}\n'}
