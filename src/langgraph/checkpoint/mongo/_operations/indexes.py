"""`setup()`: check both collections, refuse those another saver or a collation owns, and
create the indexes they lack."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pymongo import IndexModel
from pymongo.errors import OperationFailure, WriteConcernError

from langgraph.checkpoint.mongo import _queries
from langgraph.checkpoint.mongo._commands import Command, Method, Plan, Target
from langgraph.checkpoint.mongo._keys import str_list
from langgraph.checkpoint.mongo._logging import logger
from langgraph.checkpoint.mongo._operations.state import Storage
from langgraph.checkpoint.mongo._schema import Field
from langgraph.checkpoint.mongo._ttl import ThreadExpiry
from langgraph.checkpoint.mongo.errors import UNAUTHORIZED, IndexCreationError

# With `ttl`: the TTL index, and the index of pinned threads' documents (see `_ttl`).
_EXPIRY_INDEX_NAMES = frozenset({_queries.TTL_INDEX_NAME, _queries.PINNED_INDEX_NAME})


def index_names(storage: Storage) -> frozenset[str]:
    """The indexes `setup()` creates for a saver of these options (`setup`'s `needs`)."""
    reads_apart = not storage.reads.joined
    names = {index.document["name"] for _, index in _queries.indexes(storage.join, reads_apart)}
    return frozenset(names | (_EXPIRY_INDEX_NAMES if storage.expiry else set()))


def setup(
    storage: Storage,
    names: Mapping[Target, str],
    create_indexes: bool,
    skip_indexes: Collection[str],
) -> Plan[frozenset[str]]:
    """Ask the server what it is (`buildInfo`: see `WritesReads`), check both collections,
    then create the indexes they lack; returns which of the saver's indexes (`index_names`)
    the collections now have. Every check (a non-binary collation, the official saver's
    indexes, an index named like the TTL index on other keys) reads before the first write.
    """
    skip = set(str_list(list(skip_indexes), "skip_indexes"))
    known = _queries.INDEX_NAMES | _EXPIRY_INDEX_NAMES
    unknown = skip - known
    if unknown:
        raise ValueError(
            f"skip_indexes names unknown indexes {sorted(unknown)}; the indexes are {sorted(known)}"
        )
    build_info = yield Command(Target.DATABASE, Method.COMMAND, _queries.BUILD_INFO)
    storage.reads.joined = _queries.joins_by_index(build_info)
    targets = (Target.CHECKPOINTS, Target.WRITES)
    listed = yield Command(
        Target.DATABASE,
        Method.COMMAND,
        *_queries.collections_named([names[target] for target in targets]),
    )
    found = _queries.listed_collections(listed)
    existing: dict[Target, Mapping[str, Any]] = {}
    for target in targets:
        _refuse_collation(names[target], found.get(names[target], {}))
        # A collection that does not exist has no index (and nothing to refuse).
        listed_here = names[target] in found
        existing[target] = (yield Command(target, Method.INDEX_INFORMATION)) if listed_here else {}
        _refuse_foreign_index(names[target], existing[target])
    have = {name for target in targets for name in existing[target]} & index_names(storage)
    if not create_indexes:
        return frozenset(have)
    expiry = storage.expiry if _queries.TTL_INDEX_NAME not in skip else None
    if _queries.TTL_INDEX_NAME not in skip:
        for target in targets:
            _refuse_other_ttl_index(names[target], existing[target], expiry)
    for target in targets:
        wanted = [
            index
            for of, index in _queries.indexes(storage.join, not storage.reads.joined)
            if of is target and index.document["name"] not in skip
        ]
        ttl = existing[target].get(_queries.TTL_INDEX_NAME)
        seconds = expiry.seconds if expiry is not None else None
        if seconds is not None and ttl is None:
            wanted.append(_queries.ttl_index(seconds))
        if storage.expiry is not None and _queries.PINNED_INDEX_NAME not in skip:
            wanted.append(_queries.pinned_index())
        missing = [index for index in wanted if not _queries.index_exists(existing[target], index)]
        if missing:
            yield from _create_indexes(names[target], target, missing)
        if seconds is not None and ttl is not None and ttl.get("expireAfterSeconds") != seconds:
            retimed = _queries.ttl_retimed(names[target], seconds)
            yield Command(Target.DATABASE, Method.COMMAND, *retimed)
    return (index_names(storage) - skip) | have


def _refuse_collation(collection: str, options: Mapping[str, Any]) -> None:
    """Refuse a collection whose default collation (`options`: its listed options) is
    not MongoDB's binary one: every match of ids and of metadata strings must be byte
    equality (`"A" != "a"`), as in `InMemorySaver`, not a locale's."""
    collation = _queries.collation_of(options)
    if collation is not None:
        raise ValueError(
            f"collection {collection!r} has the default collation {collation}: this saver "
            "matches thread ids, checkpoint ids and metadata strings byte for byte, which a "
            "collation would change (with strength 2, 'A' and 'a' would be one thread). "
            "Use collections created without a collation (other names, or another database)"
        )


def _refuse_foreign_index(collection: str, existing: Mapping[str, Any]) -> None:
    """Refuse collections that `langgraph-checkpoint-mongodb` writes to (same default names;
    `existing`: `index_information()`): its threads would look empty here, and the next
    write would fail on its unique index (E11000) or land among its documents."""
    name = _queries.foreign_index(existing)
    if name is not None:
        raise ValueError(
            f"collection {collection!r} has the index {name!r} on "
            f"{list(dict(existing[name]['key']))}, which langgraph-checkpoint-mongodb "
            "creates: it holds that saver's documents. Give this saver its own collections "
            "(checkpoint_collection_name=..., writes_collection_name=...) or database; see "
            "https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/migrating/#moving-from-langgraph-checkpoint-mongodb"
        )


def _refuse_other_ttl_index(
    collection: str, indexes: Mapping[str, Any], expiry: ThreadExpiry | None
) -> None:
    """Refuse an index named like the whole-thread TTL index on other keys (`indexes`:
    `index_information()`). A saver without `ttl` leaves a TTL index alone (only warns):
    it must not switch expiry off for the services that share the collections."""
    name = _queries.TTL_INDEX_NAME
    existing = indexes.get(name)
    if existing is not None and not _queries.is_thread_ttl(existing):
        raise ValueError(
            f"collection {collection!r} has an index named {name!r} on "
            f"{existing.get('key')}, not on {Field.TOUCHED_AT!r}: drop or rename it, or call "
            f"setup(skip_indexes={{{name!r}}})"
        )
    if expiry is None and existing is not None:
        logger.warning(
            "collection %r has the TTL index %r but this saver has ttl=None: threads "
            "stamped by savers with a ttl still expire; drop the index to stop that",
            collection,
            name,
        )


# Failures of createIndexes that are not the server refusing an index (write concern, login,
# time limit, a stepped-down primary): raised as the server sent them, without index advice.
_NOT_INDEX_REFUSALS = frozenset(
    {18, 50, 64, 79, 91, 100, 189, 262, 10107, 11600, 11602, 13435, 13436}
)


def _create_indexes(collection: str, target: Target, indexes: Sequence[IndexModel]) -> Plan[None]:
    """One createIndexes with all of `indexes`; when the server refuses it, each index on
    its own, so the `IndexCreationError` names the one refused."""
    try:
        yield Command(target, Method.CREATE_INDEXES, (list(indexes),))
    except OperationFailure as exc:
        if exc.code == UNAUTHORIZED:  # the user may not create indexes (no privilege)
            raise IndexCreationError(collection, indexes[0].document, exc) from exc
        if isinstance(exc, WriteConcernError) or exc.code in _NOT_INDEX_REFUSALS:
            note = getattr(exc, "add_note", None)
            if note is not None:
                note(f"while setup() created the indexes of collection {collection!r}")
            raise
        if len(indexes) == 1:
            raise IndexCreationError(collection, indexes[0].document, exc) from exc
        for index in indexes:
            yield from _create_indexes(collection, target, [index])
        raise
