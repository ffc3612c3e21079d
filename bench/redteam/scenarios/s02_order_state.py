NAME = "s02_order_state"
# Order-dependent state: test A runs load_builtins() (the changed function), which fills a
# module-level registry; test B (later in the run) only reads the registry.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/codecs.py": """REGISTRY = {}


def register(name, fn):
    REGISTRY[name] = fn


def load_builtins():
    register("upper", str.upper)
    register("lower", str.lower)
    return sorted(REGISTRY)
""",
    "tests/test_a_builtins.py": """from pkg.codecs import load_builtins


def test_builtins_load():
    assert "upper" in load_builtins()
""",
    "tests/test_b_lookup.py": """from pkg import codecs


def test_lookup_lower():
    assert codecs.REGISTRY["lower"]("AbC") == "abc"
""",
}
PATCH = {
    "src/pkg/codecs.py": BASE["src/pkg/codecs.py"].replace(
        '    register("lower", str.lower)\n', '    register("casefold", str.casefold)\n'
    ),
}
