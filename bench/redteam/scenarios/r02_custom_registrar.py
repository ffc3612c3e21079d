NAME = "r02_custom_registrar"
# Module A's function fills module B's registry through B's own function (add_codec: not a
# name in modstate's list of mutating methods). A keeps no state by its own text; the
# registry B keeps outlives the test that ran A's function (the patch overrides an entry
# another test reads; that test passes alone at the base).
BASE = {
    "src/pkg/__init__.py": "from pkg import builtins, codecs\n",
    "src/pkg/codecs.py": """_TABLE = {"lower": str.lower}


def add_codec(name, fn):
    _TABLE[name] = fn


def lookup(name):
    return _TABLE[name]
""",
    "src/pkg/builtins.py": """from pkg import codecs


def install():
    codecs.add_codec("upper", str.upper)
    codecs.add_codec("title", str.title)
    return 2
""",
    "tests/test_a_install.py": """import pkg


def test_install_counts():
    assert pkg.builtins.install() == 2
""",
    "tests/test_b_lookup.py": """import pkg


def test_lookup_lower():
    assert pkg.codecs.lookup("lower")("AbC") == "abc"
""",
}
PATCH = {
    "src/pkg/builtins.py": BASE["src/pkg/builtins.py"].replace(
        'codecs.add_codec("title", str.title)', 'codecs.add_codec("lower", str.title)'
    ),
}
