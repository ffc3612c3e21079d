NAME = "r05_next_counter"
# A module-level iterator (itertools.count) advanced with next(): not a store nor a listed
# mutating method. The test that ran the changed function is charged; the one that later
# draws the next id is not.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/ids.py": """import itertools

_IDS = itertools.count(1)


def new_order():
    return {"id": next(_IDS), "kind": "order"}


def new_invoice():
    return {"id": next(_IDS), "kind": "invoice"}
""",
    "tests/test_a_order.py": """from pkg.ids import new_order


def test_order_kind():
    assert new_order()["kind"] == "order"
""",
    "tests/test_b_invoice.py": """from pkg.ids import new_invoice


def test_invoice_follows_order():
    assert new_invoice()["id"] == 2
""",
}
PATCH = {
    "src/pkg/ids.py": BASE["src/pkg/ids.py"].replace(
        '    return {"id": next(_IDS), "kind": "order"}',
        '    reserved = next(_IDS)\n    return {"id": next(_IDS), "kind": "order", "reserved": reserved}',
    ),
}
