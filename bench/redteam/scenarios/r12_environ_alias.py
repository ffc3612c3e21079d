NAME = "r12_environ_alias"
# The classic dropped copy: ``env = dict(os.environ)`` becomes ``env = os.environ``; the
# update then writes the process environment through a local name.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/runenv.py": """import os


def child_env(overrides):
    env = dict(os.environ)
    env.update(overrides)
    return env


def mode():
    return os.environ.get("PKG_MODE", "normal")
""",
    "tests/test_a_env.py": """from pkg.runenv import child_env


def test_child_env_overrides():
    assert child_env({"PKG_MODE": "safe"})["PKG_MODE"] == "safe"
""",
    "tests/test_b_mode.py": """from pkg.runenv import mode


def test_default_mode():
    assert mode() == "normal"
""",
}
PATCH = {
    "src/pkg/runenv.py": BASE["src/pkg/runenv.py"].replace(
        "env = dict(os.environ)", "env = os.environ"
    ),
}
