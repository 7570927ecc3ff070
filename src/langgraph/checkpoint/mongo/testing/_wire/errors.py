"""Command failures, answered as a server answers them: `{ok: 0, code, codeName, errmsg}`."""

from __future__ import annotations

from typing import Any

import mongomock

_CODE_NAMES = {
    1: "InternalError",
    2: "BadValue",
    9: "FailedToParse",
    13: "Unauthorized",
    14: "TypeMismatch",
    18: "AuthenticationFailed",
    26: "NamespaceNotFound",
    27: "IndexNotFound",
    43: "CursorNotFound",
    59: "CommandNotFound",
    67: "CannotCreateIndex",
    72: "InvalidOptions",
    85: "IndexOptionsConflict",
    86: "IndexKeySpecsConflict",
    115: "CommandNotSupported",
    146: "ExceededMemoryLimit",
    4568: "Location4568",
    10334: "BSONObjectTooLarge",
    11000: "DuplicateKey",
}


class CommandError(Exception):
    """A command (or one write of it) fails with this code and message."""

    def __init__(self, code: int, errmsg: str) -> None:
        super().__init__(errmsg)
        self.code = code
        self.errmsg = errmsg


def code_and_message(exc: BaseException) -> tuple[int, str]:
    """What an exception raised while executing on mongomock answers."""
    if isinstance(exc, CommandError):
        return exc.code, exc.errmsg
    if isinstance(exc, mongomock.OperationFailure):
        code = exc.code if isinstance(exc.code, int) and exc.code else 2
        return code, str(exc) or type(exc).__name__
    if isinstance(exc, NotImplementedError):
        return 115, f"not supported by the mongomock wire server: {exc}"
    return 2, f"{type(exc).__name__}: {exc}"


def error_reply(exc: BaseException) -> dict[str, Any]:
    code, errmsg = code_and_message(exc)
    return {
        "ok": 0.0,
        "errmsg": errmsg,
        "code": code,
        "codeName": _CODE_NAMES.get(code, "UnknownError"),
    }


def non_negative(value: Any, field: str) -> int:
    """An integer field of a command; absent is 0."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CommandError(14, f"BSON field '{field}' is the wrong type")
    if value < 0:
        raise CommandError(2, f"BSON field '{field}' must be non-negative")
    return int(value)
