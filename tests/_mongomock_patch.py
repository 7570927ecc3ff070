"""Test-only fix for mongomock 4.3 `bulk_write` on pymongo >= 4.11.

pymongo 4.11 passes `sort=` to the bulk builder's `add_update`/`add_replace`, which
mongomock 4.3 does not accept: https://github.com/mongomock/mongomock/issues/912.
The product code sends ordinary `UpdateOne`/`ReplaceOne` bulk writes, as to any
server; only the embedded mock needs this. A `sort` on an update is never sent by
the savers, so it is refused rather than ignored.
"""

from __future__ import annotations

import functools
from typing import Any

from mongomock.collection import BulkOperationBuilder


def _accept_sort(method: Any) -> Any:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, sort: Any = None, **kwargs: Any) -> Any:
        if sort is not None:
            raise NotImplementedError("mongomock cannot apply a sort to a bulk update")
        return method(self, *args, **kwargs)

    return wrapper


def apply() -> None:
    for name in ("add_update", "add_replace"):
        method = getattr(BulkOperationBuilder, name)
        if not getattr(method, "_accepts_sort", False):
            patched = _accept_sort(method)
            patched._accepts_sort = True
            setattr(BulkOperationBuilder, name, patched)
