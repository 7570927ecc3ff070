"""What each saver method sends, step by step, without doing any I/O.

Each operation is a generator that yields `Command`s (see `_commands`) and returns the
method's result; the async and the sync saver only run them against their driver (sans-I/O),
so every operation is written once.

One module per concern, each importing only `state` and the modules listed before it:
`state`, `indexes` (`setup`), `read`, `threads`, `history`, `retention` (the trim, `prune`, the
deletes), `write` and `copy`. Every ttl stamp move is in `_ttl`. This package re-exports the
names used as `ops.X`; a test that patches a constant names the module that reads it.
"""

from langgraph.checkpoint.mongo._operations.copy import (
    checkpoint_keys_of_thread,
    copy_thread,
    refuse_foreign_documents,
    store_documents,
    stored_documents,
    thread_document_counts,
)
from langgraph.checkpoint.mongo._operations.history import delta_history, history_page
from langgraph.checkpoint.mongo._operations.indexes import index_names, setup
from langgraph.checkpoint.mongo._operations.read import (
    get_tuple,
    list_checkpoints,
    read_tuple,
    refresh_on_read,
)
from langgraph.checkpoint.mongo._operations.retention import (
    checkpoint_id_time,
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
from langgraph.checkpoint.mongo._operations.threads import (
    checkpoint_counts,
    list_threads,
    stored_size,
    thread_pinned,
)
from langgraph.checkpoint.mongo._operations.write import (
    pin_thread,
    put,
    put_writes,
    store_checkpoint,
)

__all__ = [
    "ReadCheckpoint",
    "RunStarts",
    "Storage",
    "WritesReads",
    "checkpoint_counts",
    "checkpoint_id_time",
    "checkpoint_keys_of_thread",
    "copy_thread",
    "count_bound",
    "delete_for_runs",
    "delete_thread",
    "delta_history",
    "get_tuple",
    "history_page",
    "index_names",
    "list_checkpoints",
    "list_threads",
    "pin_thread",
    "prune",
    "put",
    "put_writes",
    "read_tuple",
    "refresh_on_read",
    "refuse_foreign_documents",
    "setup",
    "slack",
    "store_checkpoint",
    "store_documents",
    "stored_documents",
    "stored_size",
    "thread_document_counts",
    "thread_pinned",
    "trim_after_put",
]
