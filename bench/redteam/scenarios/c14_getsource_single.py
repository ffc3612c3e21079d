NAME = "c14_getsource_single"
exec(open(__file__.replace("c14_getsource_single", "s10_getsource_linecache")).read())
NAME = "c14_getsource_single"
del BASE["tests/test_a_explain.py"]
