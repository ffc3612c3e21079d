NAME = "c11_lazy_getattr"
BASE = {
    "src/pkg/__init__.py": """def __getattr__(name):
    if name == "answer":
        from pkg import _impl
        return _impl.ANSWER
    raise AttributeError(name)
""",
    "src/pkg/_impl.py": "ANSWER = 42\n",
    "tests/test_a.py": "import pkg\n\n\ndef test_answer():\n    assert pkg.answer == 42\n",
    "tests/test_b.py": "import pkg\n\n\ndef test_answer_again():\n    assert pkg.answer + 1 == 43\n",
}
PATCH = {
    "src/pkg/__init__.py": BASE["src/pkg/__init__.py"].replace(
        "return _impl.ANSWER", "return _impl.ANSWER + 1"
    )
}
