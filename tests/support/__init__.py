"""What the tests share: backends, helpers, graphs, the mongomock fixes and the wire server.

`tests/` is on `sys.path` when pytest runs (its `conftest.py` sits there, with no
`__init__.py`), so tests import `from support.helpers import ...`.
"""
