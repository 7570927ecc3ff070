"""MongoDB wire messages: the 16-byte header, OP_MSG requests and replies, and the
legacy OP_QUERY handshake answered with OP_REPLY.

PyMongo < 4.20 sends the first `ismaster` of each connection as OP_QUERY; everything else is
OP_MSG, sent here without flags (no checksum, `moreToCome` or `exhaustAllowed`), so a message
with any flag, like any malformed one, is refused by hanging up, as mongod does.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

import bson
from bson.codec_options import CodecOptions, DatetimeConversion

OP_REPLY = 1
OP_QUERY = 2004
OP_MSG = 2013
MAX_MESSAGE_SIZE_BYTES = 48_000_000

_HEADER = struct.Struct("<iiii")  # length, requestID, responseTo, opCode
_QUERY_FAILURE = 2  # OP_REPLY responseFlags bit
# dict documents, naive UTC datetimes, bytes for Binary subtype 0; a date beyond
# `datetime`'s years as a `DatetimeMS` (a server stores any 64-bit date).
_CODEC: CodecOptions[dict[str, Any]] = CodecOptions(
    datetime_conversion=DatetimeConversion.DATETIME_AUTO
)


class FramingError(ValueError):
    """A message this server does not take: the connection is closed."""


def _recv_exact(sock: socket.socket, size: int) -> bytes | None:
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:], size - got)
        if n == 0:
            return None
        got += n
    return bytes(buf)


def read_message(sock: socket.socket) -> tuple[int, int, bytes] | None:
    """`(request_id, opcode, body)` of the next message; None once the client hung up."""
    header = _recv_exact(sock, _HEADER.size)
    if header is None:
        return None
    length, request_id, _response_to, opcode = _HEADER.unpack(header)
    if not _HEADER.size <= length <= MAX_MESSAGE_SIZE_BYTES:
        raise FramingError(f"message length {length}")
    body = _recv_exact(sock, length - _HEADER.size)
    return None if body is None else (request_id, opcode, body)


def _message(opcode: int, response_to: int, request_id: int, payload: bytes) -> bytes:
    return _HEADER.pack(_HEADER.size + len(payload), request_id, response_to, opcode) + payload


def parse_op_msg(body: bytes) -> tuple[str, dict[str, Any]]:
    """`(database, command)`, document sequences (kind-1 sections) merged into the command."""
    (flags,) = struct.unpack_from("<I", body, 0)
    if flags:
        raise FramingError(f"OP_MSG flags {flags:#x}")
    pos = 4
    command: dict[str, Any] | None = None
    sequences: dict[str, list[Any]] = {}
    while pos < len(body):
        kind = body[pos]
        (size,) = struct.unpack_from("<i", body, pos + 1)
        section = body[pos + 1 : pos + 1 + size]
        pos += 1 + size
        if kind == 0:
            command = bson.decode(section, codec_options=_CODEC)
        elif kind == 1:
            name, _, documents = section[4:].partition(b"\x00")
            sequences[name.decode()] = bson.decode_all(documents, codec_options=_CODEC)
        else:
            raise FramingError(f"OP_MSG section kind {kind}")
    if command is None:
        raise FramingError("OP_MSG without a body section")
    command.update(sequences)
    db = command.get("$db")
    return (db if isinstance(db, str) else "admin"), command


def op_msg_reply(request_id: int, response_to: int, reply: bytes) -> bytes:
    return _message(OP_MSG, response_to, request_id, struct.pack("<IB", 0, 0) + reply)


def parse_op_query(body: bytes) -> tuple[str | None, dict[str, Any]]:
    """`(database, command)` of a query on `<db>.$cmd`; `(None, query)` for any other
    collection (a legacy read, which no supported driver sends)."""
    ns_end = body.index(b"\x00", 4)
    db, _, collection = body[4:ns_end].decode().partition(".")
    pos = ns_end + 1 + 8  # numberToSkip, numberToReturn
    (size,) = struct.unpack_from("<i", body, pos)
    query = bson.decode(body[pos : pos + size], codec_options=_CODEC)
    if isinstance(query.get("$query"), dict):
        query = query["$query"]
    return (db if collection == "$cmd" else None), query


def op_reply(request_id: int, response_to: int, reply: bytes, *, failure: bool = False) -> bytes:
    flags = _QUERY_FAILURE if failure else 0
    payload = struct.pack("<iqii", flags, 0, 0, 1) + reply  # no cursor, one document
    return _message(OP_REPLY, response_to, request_id, payload)
