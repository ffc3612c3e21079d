NAME = "r08_logging_disable"
# logging.disable() changes the logging module's global state; "disable" is not in
# modstate's list of mutating calls.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/log.py": """import logging

log = logging.getLogger("pkg")


def quiet_run(fn):
    return fn()


def warn_low(balance):
    if balance < 10:
        log.warning("low balance: %s", balance)
    return balance
""",
    "tests/test_a_quiet.py": """from pkg.log import quiet_run


def test_quiet_run_returns():
    assert quiet_run(lambda: 3) == 3
""",
    "tests/test_b_warn.py": """import logging

from pkg.log import log, warn_low


def test_warns_when_low():
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    log.addHandler(handler)
    try:
        warn_low(3)
    finally:
        log.removeHandler(handler)
    assert seen == ["low balance: 3"]
""",
}
PATCH = {
    "src/pkg/log.py": BASE["src/pkg/log.py"].replace(
        "    return fn()\n",
        "    logging.disable(logging.CRITICAL)\n    return fn()\n",
    ),
}
