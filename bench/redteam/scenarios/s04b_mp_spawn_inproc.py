NAME = "s04b_mp_spawn_inproc"
# s04 without the companion change: one in-process test also calls square() (and still
# passes), so the map's needs are not empty; the Pool test (spawn children) is missed.
exec(open(__file__.replace("s04b_mp_spawn_inproc", "s04_mp_spawn")).read())
NAME = "s04b_mp_spawn_inproc"
BASE["tests/test_square.py"] = (
    "from pkg.work import square\n\n\ndef test_square_positive():\n    assert square(3) > 0\n"
)
del PATCH["src/pkg/util.py"]
