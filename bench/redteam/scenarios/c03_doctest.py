NAME = "c03_doctest"
# Docstring (doctest) change with --doctest-modules collecting src/.
BASE = {
    "pytest.ini": "[pytest]\npythonpath = src .\ntestpaths = tests src\naddopts = --doctest-modules\n",
    "src/pkg/__init__.py": "",
    "src/pkg/text.py": '''def shout(s):
    """Upper-case it.

    >>> shout("hi")
    'HI'
    """
    return s.upper()
''',
    "tests/test_text.py": "from pkg.text import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n",
}
PATCH = {"src/pkg/text.py": BASE["src/pkg/text.py"].replace("'HI'", "'HI!'")}
