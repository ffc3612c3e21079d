NAME = "s06_getfixturevalue"
# A test that requests a session fixture dynamically (request.getfixturevalue) has no such
# name in item.fixturenames; the fixture was already set up by an earlier test.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/catalog.py": """def load_catalog():
    return {"apple": 3, "pear": 5}
""",
    "tests/conftest.py": """import pytest

from pkg.catalog import load_catalog


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()
""",
    "tests/test_a_catalog.py": """def test_has_apple(catalog):
    assert "apple" in catalog
""",
    "tests/test_b_dynamic.py": """import pytest


@pytest.mark.parametrize("source", ["catalog"])
def test_pear_price(request, source):
    data = request.getfixturevalue(source)
    assert data["pear"] == 5
""",
}
PATCH = {
    "src/pkg/catalog.py": """def load_catalog():
    return {"apple": 3, "pear": 6}
""",
}
