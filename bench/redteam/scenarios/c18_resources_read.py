NAME = "c18_resources_read"
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/templates/greet.txt": "Hello, {name}!\n",
    "src/pkg/render.py": "from importlib import resources\n\n\ndef greet(name):\n    return resources.files('pkg').joinpath('templates/greet.txt').read_text().format(name=name)\n",
    "tests/test_a.py": "from pkg.render import greet\n\n\ndef test_greet_has_name():\n    assert 'Ann' in greet('Ann')\n",
    "tests/test_b.py": "import pkgutil\n\n\ndef test_template_text():\n    assert pkgutil.get_data('pkg', 'templates/greet.txt') == b'Hello, {name}!\\n'\n",
}
PATCH = {"src/pkg/templates/greet.txt": "Hi, {name}.\n"}
