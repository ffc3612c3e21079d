NAME = "c17_session_fixture_by_name"
exec(open(__file__.replace("c17_session_fixture_by_name", "s06_getfixturevalue")).read())
NAME = "c17_session_fixture_by_name"
BASE["tests/test_b_dynamic.py"] = "def test_pear_price(catalog):\n    assert catalog['pear'] == 5\n"
