NAME = "r10_importlib_reload"
# The changed function reloads another project module: every class it defines is a new
# object, and tests that imported the old class no longer catch what the code raises.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/errors.py": """class QuotaError(Exception):
    pass
""",
    "src/pkg/quota.py": """import importlib

from pkg import errors


def refresh():
    return errors.QuotaError.__name__


def check(used, limit):
    if used > limit:
        raise errors.QuotaError(used)
    return limit - used
""",
    "tests/test_a_refresh.py": """from pkg.quota import refresh


def test_refresh():
    assert refresh() == "QuotaError"
""",
    "tests/test_b_check.py": """import pytest

from pkg.errors import QuotaError
from pkg.quota import check


def test_over_quota_raises():
    with pytest.raises(QuotaError):
        check(5, 3)
""",
}
PATCH = {
    "src/pkg/quota.py": BASE["src/pkg/quota.py"].replace(
        "    return errors.QuotaError.__name__\n",
        "    importlib.reload(errors)\n    return errors.QuotaError.__name__\n",
    ),
}
