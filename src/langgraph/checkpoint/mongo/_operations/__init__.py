"""What each saver method sends, step by step, without doing any I/O.

Each operation is a generator that yields `Command`s and receives their results; its
return value is the method's result. The async and the sync saver only run these
generators against their driver (h11-style sans-I/O), so the logic of every
operation is written exactly once.

One module per concern, each importing only `state` and the modules listed before it:
`state` (what every plan takes of its saver), `indexes` (`setup`), `write`, `read`,
`history`, `retention` (the trim, `prune`, the deletes, orphan writes) and `copy`
(`copy_thread`, `migrate`'s helpers). Every ttl stamp move is in `_ttl`. This package
re-exports the names the savers, `migrate`, the CLIs, the tests and the benchmarks use
as `ops.X`; a test that patches a constant names the module that reads it.
"""

from langgraph.checkpoint.mongo._operations.copy import (
    checkpoint_keys_of_thread,
    copy_thread,
    refuse_foreign_documents,
    store_documents,
    stored_documents,
    thread_document_counts,
)
from langgraph.checkpoint.mongo._operations.history import delta_history
from langgraph.checkpoint.mongo._operations.indexes import setup
from langgraph.checkpoint.mongo._operations.read import (
    checkpoint_counts,
    get_tuple,
    list_checkpoints,
    list_threads,
    refresh_on_read,
)
from langgraph.checkpoint.mongo._operations.retention import (
    delete_for_runs,
    delete_thread,
    prune,
    trim_after_put,
)
from langgraph.checkpoint.mongo._operations.state import (
    ReadCheckpoint,
    RunStarts,
    Storage,
    WritesReads,
    count_bound,
    slack,
)
from langgraph.checkpoint.mongo._operations.write import put, put_writes, store_checkpoint

__all__ = [
    "ReadCheckpoint",
    "RunStarts",
    "Storage",
    "WritesReads",
    "checkpoint_counts",
    "checkpoint_keys_of_thread",
    "copy_thread",
    "count_bound",
    "delete_for_runs",
    "delete_thread",
    "delta_history",
    "get_tuple",
    "list_checkpoints",
    "list_threads",
    "prune",
    "put",
    "put_writes",
    "refresh_on_read",
    "refuse_foreign_documents",
    "setup",
    "slack",
    "store_checkpoint",
    "store_documents",
    "stored_documents",
    "thread_document_counts",
    "trim_after_put",
]
