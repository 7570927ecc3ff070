"""Channel versions keep the form a thread uses: ints here, strings where the thread came
from a saver that counts in strings (InMemorySaver, SqliteSaver, PostgresSaver).

A graph continuing a copied string-versioned thread is in `test_migrate.py`.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver


async def test_ints_count_up_from_one(saver: Any) -> None:
    assert saver.get_next_version(None, None) == 1
    assert saver.get_next_version(41, None) == 42


async def test_strings_keep_the_form_and_count_up(saver: Any) -> None:
    memory = InMemorySaver()
    current = memory.get_next_version(memory.get_next_version(None, None), None)
    following = saver.get_next_version(current, None)
    assert isinstance(following, str)
    assert following.split(".")[0] == f"{3:032}"
    assert float(following.split(".", 1)[1]) < 1
    assert following > current
    # InMemorySaver reads our version as its own and counts on from it.
    assert memory.get_next_version(following, None).split(".")[0] == f"{4:032}"


async def test_a_counter_past_the_padding_still_counts_up(saver: Any) -> None:
    assert saver.get_next_version(f"{10**32 - 1}.0.5", None).startswith(f"{10**32}.")
