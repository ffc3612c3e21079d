NAME = "r15_random_global_state"
# The random module's global generator is process-wide state: the conftest seeds it once,
# at import; the changed function draws from it once more at the head, and a later test's
# (order-dependent, green at the base) expected draw moves. random.shuffle is not a listed
# mutating call.
import random as _random

_random.seed(1234)
_deck = list(range(52))
_random.shuffle(_deck)
EXPECTED = round(_random.random(), 9)

BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/cards.py": """import random


def shuffled_deck():
    deck = list(range(52))
    random.shuffle(deck)
    return deck


def draw():
    return round(random.random(), 9)
""",
    "tests/conftest.py": """import random

random.seed(1234)
""",
    "tests/test_a_deck.py": """from pkg.cards import shuffled_deck


def test_deck_complete():
    assert sorted(shuffled_deck()) == list(range(52))
""",
    "tests/test_b_draw.py": f"""from pkg.cards import draw


def test_draw_is_reproducible():
    assert draw() == {EXPECTED!r}
""",
}
PATCH = {
    "src/pkg/cards.py": BASE["src/pkg/cards.py"].replace(
        "    random.shuffle(deck)\n", "    random.shuffle(deck)\n    random.shuffle(deck)\n"
    ),
}
