NAME = "r14_classattr_other_module"
# A class attribute of ANOTHER module's class, set through that class's own classmethod
# (Config.enable_strict: not a listed mutating name). The changed module's text stores
# into nothing it binds.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/config.py": """class Config:
    strict = False

    @classmethod
    def enable_strict(cls):
        cls.strict = True


def parse_flag(text):
    if Config.strict and text not in ("yes", "no"):
        raise ValueError(text)
    return text == "yes"
""",
    "src/pkg/cli.py": """from pkg.config import Config


def run(argv):
    opts = {"strict": "--strict" in argv}
    return opts
""",
    "tests/test_a_cli.py": """from pkg.cli import run


def test_run_parses_strict():
    assert run(["--strict"]) == {"strict": True}
""",
    "tests/test_b_flag.py": """from pkg import cli
from pkg.config import parse_flag


def test_lenient_flag():
    assert parse_flag("maybe") is False
""",
}
PATCH = {
    "src/pkg/cli.py": BASE["src/pkg/cli.py"].replace(
        '    opts = {"strict": "--strict" in argv}\n',
        '    opts = {"strict": "--strict" in argv}\n    if opts["strict"]:\n        Config.enable_strict()\n',
    ),
}
