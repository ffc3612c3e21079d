NAME = "r11_instance_in_test_global"
# An instance of the project's class held in a TEST module's global (base tests share it,
# order-dependent but green). The method mutates ``self``; the class is not instantiated at
# import in its own module, so modstate does not count it, and no fixture carries it.
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
    "tests/test_client.py": """from pkg.client import Client

CLIENT = Client()


def test_login_returns_token():
    assert CLIENT.login("ann").startswith("tok-")


def test_anonymous_request_has_no_auth():
    assert CLIENT.request("/") == {"path": "/", "headers": {}}
""",
}
PATCH = {
    "src/pkg/client.py": BASE["src/pkg/client.py"].replace(
        '        token = "tok-" + user\n',
        '        token = "tok-" + user\n        self.headers["Authorization"] = token\n',
    ),
}
