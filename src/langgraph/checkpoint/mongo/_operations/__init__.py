"""What each saver method sends, step by step, without doing any I/O.

Each operation is a generator that yields `Command`s and receives their results; its
return value is the method's result. A saver method's plan may also detach a follow-up
(`_commands.Detach`: the `keep_last` trim after `put`, a read's ttl refresh). The async
and the sync saver only run these generators against their driver (h11-style sans-I/O),
so the logic of every operation is written exactly once.

One module per concern, each importing only `state` and the modules listed before it:
`state` (what every plan takes of its saver), `indexes` (`setup`), `read`, `threads` (`list_threads`
and the `threads` CLI's reads of one thread), `history`, `retention` (the trim, `prune`, the
deletes, orphan writes), `write` (whose `put` detaches the trim) and `copy` (`copy_thread`,
`migrate`'s helpers). Every ttl stamp move is in `_ttl`. This package re-exports the names the
savers, `migrate`, the CLIs, the tests and the benchmarks use as `ops.X`; a test that patches a
constant names the module that reads it.
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
