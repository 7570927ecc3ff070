"""How many checkpoints a thread keeps: `prune(keep_last=N)`, and the saver's `keep_last`
option, which trims each namespace as it is written."""

from __future__ import annotations

from typing import Any


def check_keep_last(value: Any, name: str = "keep_last") -> int | None:
    """`value` as a number of checkpoints to keep per namespace, or `None` (no bound).

    A bool is refused although it is an int: `keep_last=True` is a mistake, not 1.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, got {type(value).__name__} {value!r}")
    if value < 0:
        raise ValueError(
            f"{name} must be 0 or more (the checkpoints kept per namespace), got {value}"
        )
    return value
