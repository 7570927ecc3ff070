"""One validator per option: the savers' arguments, the Agent Server's environment
variables and `copy-threads`' flags accept and refuse the same values with the same words
(`_options`), each naming the option as it was given; and one URI redactor."""

from __future__ import annotations

import io
import math
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from mongomock_motor import AsyncMongoMockClient

from langgraph.checkpoint.mongo import AsyncMongoDBSaver
from langgraph.checkpoint.mongo._options import MAX_TTL_SECONDS, redact_uri
from langgraph.checkpoint.mongo.agent_server import Settings
from langgraph.checkpoint.mongo.cli import _parser

NOWHERE = "mongodb://127.0.0.1:9/"


def saver_refusal(**options: Any) -> str:
    with pytest.raises((TypeError, ValueError)) as raised:
        AsyncMongoDBSaver(AsyncMongoMockClient(), **options)
    return str(raised.value)


def env_refusal(variable: str, text: str) -> str:
    with pytest.raises(ValueError, match=variable) as raised:
        Settings.from_env({"MONGODB_URI": NOWHERE, variable: text})
    return str(raised.value)


def cli_refusal(capsys: pytest.CaptureFixture[str], flag: str, text: str) -> str:
    """argparse's line for a bad flag (`argument --ttl: ...`), exit code 2."""
    argv = ["copy-threads", "--from-sqlite", "x.db", "--to", NOWHERE, f"{flag}={text}"]
    with pytest.raises(SystemExit) as raised:
        _parser().parse_args(argv)
    assert raised.value.code == 2
    [line] = [line for line in capsys.readouterr().err.splitlines() if "argument" in line]
    return line


TTL_OUT_OF_RANGE = f"must be from 1 to {MAX_TTL_SECONDS} seconds (MongoDB's largest TTL), got "


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (2**40, "1099511627776"),  # accepted by the saver before, refused by the server
        (MAX_TTL_SECONDS + 1, "2147483648"),
        (math.nan, "nan"),  # "cannot convert float NaN to integer" before
        (math.inf, "inf"),  # an OverflowError before
        (-math.inf, "-inf"),
        (1e400, "1e400"),
        (0, "0"),
        (-5, "-5"),
        (0.5, "0.5"),
    ],
)
def test_a_ttl_out_of_range_is_refused_alike_everywhere(
    capsys: pytest.CaptureFixture[str], seconds: float, text: str
) -> None:
    assert saver_refusal(ttl=seconds).startswith(f"ttl {TTL_OUT_OF_RANGE}")
    assert env_refusal("MONGODB_TTL_SECONDS", text).startswith(
        f"MONGODB_TTL_SECONDS {TTL_OUT_OF_RANGE}"
    )
    assert f"argument --ttl: {TTL_OUT_OF_RANGE}" in cli_refusal(capsys, "--ttl", text)


@pytest.mark.parametrize(
    "ttl", [timedelta(seconds=MAX_TTL_SECONDS + 1), timedelta(days=-1), timedelta(0)]
)
def test_a_timedelta_out_of_range_is_refused(ttl: timedelta) -> None:
    assert saver_refusal(ttl=ttl) == f"ttl {TTL_OUT_OF_RANGE}{ttl!r}"


@pytest.mark.parametrize("ttl", [True, "1h", [60], Decimal(60)])
def test_a_ttl_of_another_type_is_a_type_error(ttl: Any) -> None:
    with pytest.raises(TypeError, match=r"^ttl must be seconds"):
        AsyncMongoDBSaver(AsyncMongoMockClient(), ttl=ttl)


@pytest.mark.parametrize("seconds", [1, 1.5, 86400, MAX_TTL_SECONDS])
def test_a_ttl_in_range_is_accepted_alike_everywhere(seconds: float) -> None:
    expected = timedelta(seconds=seconds)
    assert AsyncMongoDBSaver(AsyncMongoMockClient(), ttl=seconds).ttl == expected
    assert AsyncMongoDBSaver(AsyncMongoMockClient(), ttl=expected).ttl == expected
    assert Settings.from_env({"MONGODB_TTL_SECONDS": str(seconds)}).ttl == seconds
    argv = ["copy-threads", "--from-sqlite", "x.db", "--to", NOWHERE, "--ttl", str(seconds)]
    assert _parser().parse_args(argv).ttl == expected


def test_a_ttl_that_is_no_number_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert env_refusal("MONGODB_TTL_SECONDS", "a day") == (
        "MONGODB_TTL_SECONDS must be a number of seconds, got 'a day'"
    )
    assert "argument --ttl: must be a number of seconds, got 'a day'" in cli_refusal(
        capsys, "--ttl", "a day"
    )


@pytest.mark.parametrize(
    ("option", "variable", "flag", "value"),
    [
        ("db_name", "MONGODB_DB_NAME", "--to-db", "my.db"),
        ("db_name", "MONGODB_DB_NAME", "--from-db", "d" * 64),
        ("checkpoint_collection_name", "MONGODB_CHECKPOINT_COLLECTION", "--to-checkpoints", "a$b"),
        ("writes_collection_name", "MONGODB_WRITES_COLLECTION", "--to-writes", "system.w"),
        ("checkpoint_collection_name", "MONGODB_CHECKPOINT_COLLECTION", "--from-checkpoints", "a."),
        ("writes_collection_name", "MONGODB_WRITES_COLLECTION", "--from-writes", "a..b"),
    ],
)
def test_a_bad_name_is_refused_alike_everywhere(
    capsys: pytest.CaptureFixture[str], option: str, variable: str, flag: str, value: str
) -> None:
    problem = saver_refusal(**{option: value}).removeprefix(f"{option} ")
    assert problem.startswith("must be a MongoDB ")
    assert env_refusal(variable, value) == f"{variable} {problem}"
    assert f"argument {flag}: {problem}" in cli_refusal(capsys, flag, value)


def test_equal_collection_names_are_refused_alike_everywhere() -> None:
    problem = "must name two different collections, both are 'same'"
    assert saver_refusal(checkpoint_collection_name="same", writes_collection_name="same") == (
        f"checkpoint_collection_name and writes_collection_name {problem}"
    )
    with pytest.raises(ValueError, match="MONGODB_CHECKPOINT_COLLECTION") as raised:
        Settings.from_env(
            {"MONGODB_CHECKPOINT_COLLECTION": "same", "MONGODB_WRITES_COLLECTION": "same"}
        )
    assert (
        str(raised.value)
        == f"MONGODB_CHECKPOINT_COLLECTION and MONGODB_WRITES_COLLECTION {problem}"
    )
    from langgraph.checkpoint.mongo.cli import main

    err = io.StringIO()
    argv = ["copy-threads", "--from-sqlite", __file__, "--to", NOWHERE]
    code = main([*argv, "--to-checkpoints", "same", "--to-writes", "same"], io.StringIO(), err)
    assert (code, err.getvalue()) == (2, f"error: --to-checkpoints and --to-writes {problem}\n")


def test_a_bad_compression_is_refused_alike_everywhere() -> None:
    problem = "must be one of zlib, zstd or None, got 'lz4'"
    assert saver_refusal(compression="lz4") == f"compression {problem}"
    assert env_refusal("MONGODB_COMPRESSION", "LZ4") == f"MONGODB_COMPRESSION {problem}"
    assert Settings.from_env({"MONGODB_COMPRESSION": "None"}).compression is None
    assert Settings.from_env({"MONGODB_COMPRESSION": "ZSTD"}).compression == "zstd"


def test_a_bad_batch_size_is_refused_alike(capsys: pytest.CaptureFixture[str]) -> None:
    from langgraph.checkpoint.mongo.migrate import OfficialMongoDBSource

    for value in (0, -1):
        with pytest.raises(ValueError, match="batch_size") as raised:
            OfficialMongoDBSource(AsyncMongoMockClient()["db"], batch_size=value)
        assert str(raised.value) == f"batch_size must be an int of at least 1, got {value}"
        line = cli_refusal(capsys, "--batch-size", str(value))
        assert f"argument --batch-size: must be an int of at least 1, got {value}" in line
    with pytest.raises(TypeError, match=r"^batch_size must be an int of at least 1, got str"):
        OfficialMongoDBSource(AsyncMongoMockClient()["db"], batch_size="10")  # type: ignore[arg-type]
    line = cli_refusal(capsys, "--batch-size", "x")
    assert "argument --batch-size: must be a whole number, got 'x'" in line


# The Agent Server's redactor kept the user and the options it knew to be secret; the
# CLI's dropped the user and every option but cut the password at its first `@` or `/`.
# The one redactor hides credentials and options whole, and cuts at the last `@`.
@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("mongodb://app:s3cret@db.example:27017/?w=1", "mongodb://***@db.example:27017/?***"),
        (
            "mongodb+srv://app:s3c%40ret@cluster0.example.net",
            "mongodb+srv://***@cluster0.example.net",
        ),
        ("mongodb://app:s3c@r/et@db.example/", "mongodb://***@db.example/"),  # unescaped
        ("mongodb://app:s3c/r@et@db.example/db", "mongodb://***@db.example/db"),
        (
            "mongodb://db.example/?tls=true&tlsCertificateKeyFilePassword=s3cret&w=1",
            "mongodb://db.example/?***",
        ),
        (
            "mongodb://db.example/?authMechanism=MONGODB-AWS&authMechanismProperties="
            "AWS_SESSION_TOKEN:s3cret",
            "mongodb://db.example/?***",
        ),
        # The CLI's case: user, password and options.
        (
            "mongodb://someone:s3cret@127.0.0.1:9/?authSource=admin",
            "mongodb://***@127.0.0.1:9/?***",
        ),
        # An `@` after a `?`: in the password or in an option, nothing is shown.
        ("mongodb://db/?tlsCertificateKeyFilePassword=p@s3c", "mongodb://***"),
        ("mongodb://app:s3c?r@et@db.example/", "mongodb://***"),
        ("app:s3cret@db.example:27017", "***@db.example:27017"),
        ("mongodb://db.example", "mongodb://db.example"),
    ],
)
def test_the_uri_is_shown_without_its_secrets(uri: str, shown: str) -> None:
    assert redact_uri(uri) == shown
    assert "s3c" not in redact_uri(uri)
    settings = Settings.from_env({"MONGODB_URI": uri})
    assert settings.uri == uri  # what the client gets is untouched
    assert repr(settings).startswith(f"Settings(uri={shown!r}, ")
    assert "s3c" not in repr(settings)


@pytest.mark.parametrize("serde", ["json", 42, object()])
def test_a_serde_that_is_no_serializer_is_refused_when_the_saver_is_built(serde: Any) -> None:
    """It failed at the first `put` with `'str' object has no attribute 'dumps'`."""
    assert saver_refusal(serde=serde) == (
        "serde must be a serializer object with dumps_typed() and loads_typed() (LangGraph's "
        "SerializerProtocol, e.g. JsonPlusSerializer() or EncryptedSerializer), or None for "
        f"LangGraph's default, got {type(serde).__name__} {serde!r}"
    )


def test_a_serializer_of_either_protocol_is_accepted() -> None:
    import pickle

    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    typed = JsonPlusSerializer()
    assert AsyncMongoDBSaver(AsyncMongoMockClient(), serde=typed).serde is typed
    untyped: Any = pickle
    assert AsyncMongoDBSaver(AsyncMongoMockClient(), serde=untyped).serde.serde is pickle  # type: ignore[attr-defined]


def test_a_bad_state_warn_bytes_is_refused_alike_everywhere() -> None:
    problem = "must be 0 (no warning) or more bytes, got -1"
    assert saver_refusal(state_warn_bytes=-1) == f"state_warn_bytes {problem}"
    assert env_refusal("MONGODB_STATE_WARN_BYTES", "-1") == f"MONGODB_STATE_WARN_BYTES {problem}"
    assert "must be an int (bytes)" in saver_refusal(state_warn_bytes=1.5)
    assert "must be an int (bytes)" in saver_refusal(state_warn_bytes=True)
    assert Settings.from_env({}).state_warn_bytes == 8 * 1024 * 1024
