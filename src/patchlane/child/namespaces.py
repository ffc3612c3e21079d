"""The one name for a Python namespace, as the child's checks capture and compare them.

Imported inside the child's (hostile) interpreter: the standard library only, and nothing
runs at import but the alias itself.
"""

from __future__ import annotations

from typing import Any

Namespace = dict[str, Any]
"""A live or captured Python namespace: a module's ``__dict__``, what ``vars()`` returns
(typeshed types a class's read-only ``mappingproxy`` so too; where a namespace is only read
it is a ``Mapping[str, Any]``), or entries captured from one of them. Its values are
arbitrary objects by nature (whatever the code under test bound), hence ``Any``. Records,
JSON objects and keyword arguments are not namespaces: they are typed as what they are."""
