NAME = "r19_unittest_setupclass"
# unittest's setUpClass (and xunit setup_class/setup_module) run in class- or module-scoped
# fixtures pytest itself makes (_pytest.unittest): the recorder's _pytest_own() leaves them
# out of the "shared" fixtures, though the value they share (a class attribute) is the
# project's object. login() mutates the instance (not made at import in its own module).
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/client.py": """class Client:
    def __init__(self):
        self.headers = {}

    def login(self, user):
        token = "tok-" + user
        return token

    def request(self, path):
        return {"path": path, "headers": dict(self.headers)}
""",
    "tests/test_client.py": """import unittest

from pkg.client import Client


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = Client()

    def test_a_login_returns_token(self):
        self.assertTrue(self.client.login("ann").startswith("tok-"))

    def test_b_anonymous_request(self):
        self.assertEqual(self.client.request("/"), {"path": "/", "headers": {}})
""",
}
PATCH = {
    "src/pkg/client.py": BASE["src/pkg/client.py"].replace(
        '        token = "tok-" + user\n',
        '        token = "tok-" + user\n        self.headers["Authorization"] = token\n',
    ),
}
