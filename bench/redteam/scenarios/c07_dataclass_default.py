NAME = "c07_dataclass_default"
BASE = {
    "src/pkg/__init__.py": "",
    "src/pkg/model.py": "from dataclasses import dataclass\n\n\n@dataclass\nclass Item:\n    name: str\n    qty: int = 1\n",
    "tests/test_model.py": "from pkg.model import Item\n\n\ndef test_default_qty():\n    assert Item('a').qty == 1\n",
}
PATCH = {"src/pkg/model.py": BASE["src/pkg/model.py"].replace("qty: int = 1", "qty: int = 0")}
