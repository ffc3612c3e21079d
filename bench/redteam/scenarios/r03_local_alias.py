NAME = "r03_local_alias"
# The module's own registry, stored into through a local alias (``table = _HANDLERS``):
# modstate roots a store at the local name, which the function binds itself, so the
# module "keeps no state" and the change is judged by the one test that ran it.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/events.py": """_HANDLERS = {}


def on(name, fn):
    table = _HANDLERS
    table.setdefault(name, []).append(fn)


def emit(name, value):
    return [fn(value) for fn in _HANDLERS.get(name, [])]


def _double(v):
    return v * 2


def install_defaults():
    table = _HANDLERS
    table["double"] = [_double]
    return sorted(table)
""",
    "tests/test_a_defaults.py": """from pkg.events import install_defaults


def test_defaults_installed():
    assert install_defaults()
""",
    "tests/test_b_emit.py": """from pkg.events import emit, on


def test_emit_double():
    on("double", lambda v: v * 2)
    assert emit("double", 4)[-1] == 8
    assert all(isinstance(r, int) for r in emit("double", 4))
""",
}
PATCH = {
    "src/pkg/events.py": BASE["src/pkg/events.py"].replace(
        'table["double"] = [_double]', 'table["double"] = [str]'
    ),
}
