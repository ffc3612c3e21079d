NAME = "r06_class_attr_via_self"
# A class-level mutable default mutated through ``self`` (the classic shared-list bug):
# ``self.tags.append`` is rooted at ``self``, and no instance is made at import, so modstate
# does not count it; the list lives in the class, shared by every later instance.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/opts.py": """class Options:
    tags = []

    def tag(self, name):
        self.tags = self.tags + [name]
        return self
""",
    "tests/test_a_tag.py": """from pkg.opts import Options


def test_tag_adds():
    assert Options().tag("x").tags == ["x"]
""",
    "tests/test_b_fresh.py": """from pkg.opts import Options


def test_fresh_options_untagged():
    assert Options().tags == []
""",
}
PATCH = {
    "src/pkg/opts.py": BASE["src/pkg/opts.py"].replace(
        "self.tags = self.tags + [name]", "self.tags.append(name)"
    ),
}
