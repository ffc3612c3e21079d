NAME = "r23_descriptor_cache"
# A caching non-data descriptor (as werkzeug's cached_property or a hand-rolled ``lazy``):
# __get__ runs once per instance, then the value sits in the instance's __dict__ and later
# reads never run it. The instance is a module-level SETTINGS object of ANOTHER module, so
# only the first test that read the attribute ran __get__. __get__ stores through its
# ``obj`` parameter, which modstate does not root at anything shared.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/lazy.py": """class lazy:
    def __init__(self, fn):
        self.fn = fn
        self.name = fn.__name__

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        value = self.fn(obj)
        obj.__dict__[self.name] = value
        return value
""",
    "src/pkg/settings.py": """from pkg.lazy import lazy


class Settings:
    @lazy
    def db_url(self):
        return "sqlite:///app.db"


SETTINGS = Settings()
""",
    "tests/test_a_url.py": """from pkg.settings import SETTINGS


def test_url_is_sqlite():
    assert SETTINGS.db_url.startswith("sqlite")
""",
    "tests/test_b_path.py": """from pkg import lazy  # noqa: F401
from pkg.settings import SETTINGS


def test_url_points_at_app_db():
    assert SETTINGS.db_url.endswith("/app.db")
""",
}
PATCH = {
    "src/pkg/lazy.py": BASE["src/pkg/lazy.py"].replace(
        "        value = self.fn(obj)\n", "        value = self.fn(obj).rstrip('/app.db') + '/'\n"
    ),
}
