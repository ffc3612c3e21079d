NAME = "s14b_raw_thread_inproc"
exec(open(__file__.replace("s14b_raw_thread_inproc", "s14_raw_thread")).read())
NAME = "s14b_raw_thread_inproc"
BASE["tests/test_worker.py"] = """import _thread

from pkg.bg import _worker


def test_worker_direct():
    out, done = [], _thread.allocate_lock()
    done.acquire()
    _worker([], out, done)
    assert out == [0]
"""
del PATCH["src/pkg/util.py"]
