NAME = "c15_mp_fork"
exec(open(__file__.replace("c15_mp_fork", "s04_mp_spawn")).read())
NAME = "c15_mp_fork"
for d in (BASE, PATCH):
    d["src/pkg/work.py"] = d["src/pkg/work.py"].replace(
        'get_context("spawn")', 'get_context("fork")'
    )
