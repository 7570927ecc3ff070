"""Test-only fixes for two mongomock 4.3 bugs; the product code stays real-server code.

1. `bulk_write` on pymongo >= 4.11: pymongo passes `sort=` to the bulk builder's
   `add_update`/`add_replace`, which mongomock 4.3 does not accept
   (https://github.com/mongomock/mongomock/issues/912). The savers send ordinary
   `UpdateOne` bulk writes, as to any server (the wire server's own tests send
   `ReplaceOne` too). A `sort` on an update is
   never sent by the savers, so it is refused rather than ignored.
2. TTL expiry of a document whose `_id` is a subdocument: mongomock stores such
   documents under a hashable copy of the `_id` but its TTL sweep deletes by the raw
   dict and crashes with `TypeError: unhashable type: 'dict'`. A server has no such
   problem; the savers' `_id`s are subdocuments.

And one gap filled: mongomock 4.3 refuses `$lookup` with a `pipeline`. The savers send
MongoDB 5.0's concise correlated form (`localField`/`foreignField` *and* a `pipeline`
that runs on the matched foreign documents); it is implemented here as the server
defines it: the equality join, then the sub-pipeline on each joined array. A `let`
(or a `pipeline` without `localField`) is still refused.

And `Collection.options()`, which mongomock 4.3 lacks (its `__getattr__` would hand back
a sub-collection named "options"): mongomock keeps no collection options, so it returns
`{}`, as a server does for a collection created without options.

And two speed-ups, behaviour unchanged:
- mongomock's `aggregate` copies the whole collection before its first stage; a leading
  `$match` is applied as a `find` filter first (the same filter engine), so the
  many-threads tests stay fast on the mock;
- every scan of a collection walked its `OrderedDict` of documents, which looks each key
  up again: a subdocument `_id` (ours are) is re-hashed in Python, twice per document per
  scan, which made each upsert cost several times what it costs with an ObjectId `_id`.
  The scan reads the same documents in the same order from the underlying dict (the
  store never reorders them). A server finds these `_id`s through its index.
"""

from __future__ import annotations

import functools
from typing import Any

from mongomock import aggregate as mongomock_aggregate
from mongomock import helpers
from mongomock.collection import BulkOperationBuilder, Collection
from mongomock.store import CollectionStore


def _accept_sort(method: Any) -> Any:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, sort: Any = None, **kwargs: Any) -> Any:
        if sort is not None:
            raise NotImplementedError("mongomock cannot apply a sort to a bulk update")
        return method(self, *args, **kwargs)

    return wrapper


def _delete_by_hashable_id(method: Any) -> Any:
    @functools.wraps(method)
    def wrapper(self: Any, key: Any) -> Any:
        if isinstance(key, dict) and not isinstance(key, helpers.hashdict):
            key = helpers.hashdict(key)
        return method(self, key)

    wrapper._hashes_ids = True  # type: ignore[attr-defined]
    return wrapper


def _aggregate_match_first(self: Any, pipeline: Any, session: Any = None, **_: Any) -> Any:
    if pipeline and "$match" in pipeline[0] and len(pipeline[0]) == 1:
        documents = list(self.find(pipeline[0]["$match"]))
        return mongomock_aggregate.process_pipeline(documents, self.database, pipeline[1:], session)
    documents = list(self.find())
    return mongomock_aggregate.process_pipeline(documents, self.database, pipeline, session)


def _concise_lookup(plain_lookup: Any) -> Any:
    @functools.wraps(plain_lookup)
    def handler(documents: Any, database: Any, options: Any) -> Any:
        if "pipeline" not in options or "let" in options or "localField" not in options:
            return plain_lookup(documents, database, options)
        joined = plain_lookup(
            documents, database, {k: v for k, v in options.items() if k != "pipeline"}
        )
        for doc in joined:
            doc[options["as"]] = list(
                mongomock_aggregate.process_pipeline(
                    doc[options["as"]], database, options["pipeline"], None
                )
            )
        return joined

    handler._concise = True  # type: ignore[attr-defined]
    return handler


def _documents_without_rehashing(self: Any) -> Any:
    self._remove_expired_documents()
    with self._rwlock.reader():
        yield from dict.values(self._documents)


def _no_options(self: Any, session: Any = None, comment: Any = None) -> dict[str, Any]:
    return {}


def apply() -> None:
    Collection.options = _no_options  # type: ignore[method-assign,assignment]
    CollectionStore.documents = property(_documents_without_rehashing)  # type: ignore[assignment,method-assign]
    handlers = mongomock_aggregate._PIPELINE_HANDLERS
    if not getattr(handlers["$lookup"], "_concise", False):
        handlers["$lookup"] = _concise_lookup(handlers["$lookup"])
    Collection.aggregate = _aggregate_match_first  # type: ignore[method-assign]
    if not getattr(CollectionStore.__delitem__, "_hashes_ids", False):
        CollectionStore.__delitem__ = _delete_by_hashable_id(CollectionStore.__delitem__)  # type: ignore[method-assign]
    for name in ("add_update", "add_replace"):
        method = getattr(BulkOperationBuilder, name)
        if not getattr(method, "_accepts_sort", False):
            patched = _accept_sort(method)
            patched._accepts_sort = True
            setattr(BulkOperationBuilder, name, patched)
