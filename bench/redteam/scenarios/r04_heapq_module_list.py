NAME = "r04_heapq_module_list"
# A module-level list changed through a call that takes it as an argument
# (heapq.heappush(_QUEUE, ...)): not a method call on the list, so modstate does not see a
# mutation of module state.
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/jobs.py": """import heapq

_QUEUE = [(3, "warmup")]


def schedule_defaults():
    heapq.heappush(_QUEUE, (5, "cleanup"))
    heapq.heappush(_QUEUE, (7, "report"))
    return len(_QUEUE)


def next_job():
    return _QUEUE[0][1] if _QUEUE else None
""",
    "tests/test_a_schedule.py": """from pkg.jobs import schedule_defaults


def test_schedule_defaults():
    assert schedule_defaults() >= 3
""",
    "tests/test_b_next.py": """from pkg.jobs import next_job


def test_warmup_first():
    assert next_job() == "warmup"
""",
}
PATCH = {
    "src/pkg/jobs.py": BASE["src/pkg/jobs.py"].replace('(7, "report")', '(1, "report")'),
}
