NAME = "c16_eq_hash"
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/money.py": """class Money:
    def __init__(self, cents, cur):
        self.cents, self.cur = cents, cur

    def __eq__(self, other):
        return (self.cents, self.cur) == (other.cents, other.cur)

    def __hash__(self):
        return hash((self.cents, self.cur))
""",
    "tests/test_money.py": "from pkg.money import Money\n\n\ndef test_set_dedup():\n    assert len({Money(1, 'EUR'), Money(1, 'EUR')}) == 1\n",
}
PATCH = {
    "src/pkg/money.py": BASE["src/pkg/money.py"].replace(
        "return hash((self.cents, self.cur))", "return id(self)"
    )
}
