"""Sans-IO Avatica layer, checked against the exact bodies recorded from the real 1.26.0 driver
(shared/reference/avatica-transcript.md, beside the repository): what we send must equal what the
driver sends, and the answers the driver accepted must parse."""

from __future__ import annotations

import datetime as dt

import orjson
import pytest

from pm_notebook.errors import AuthenticationError, QueryError
from pm_notebook.sql import ColumnSpec
from pm_notebook.sql import avatica_protocol as proto
from pm_notebook.sql._errors import from_avatica, server_text

CID = "73cd1329-d0b8-4fe6-974d-6b1361b06bc3"
SQL = 'SELECT __time, channel, added, delta, isRobot, page, tags, "day" FROM wikipedia'
PSQL = "SELECT channel, added FROM wikipedia WHERE channel = ? AND added > ?"

# Requests of the main run (section A), verbatim.
SENT = {
    "open": '{"request":"openConnection","connectionId":"%s","info":{"password":"secret","user":"alice"}}',
    "sync": '{"request":"connectionSync","connectionId":"%s","connProps":{"connProps":"connPropsImpl",'
    '"autoCommit":null,"readOnly":null,"transactionIsolation":null,"catalog":null,"schema":null,"dirty":true}}',
    "create": '{"request":"createStatement","connectionId":"%s"}',
    "pae": '{"request":"prepareAndExecute","connectionId":"%s","statementId":3,'
    '"sql":"SELECT __time, channel, added, delta, isRobot, page, tags, \\"day\\" FROM wikipedia",'
    '"maxRowsInFirstFrame":-1,"maxRowCount":-1}',
    "fetch": '{"request":"fetch","connectionId":"%s","statementId":3,"offset":100,"fetchMaxRowCount":60}',
    "close_st": '{"request":"closeStatement","connectionId":"%s","statementId":3}',
    "prepare": '{"request":"prepare","connectionId":"%s","sql":"SELECT channel, added FROM wikipedia WHERE '
    'channel = ? AND added > ?","maxRowCount":-1}',
    "close_conn": '{"request":"closeConnection","connectionId":"%s"}',
}

PREPARE_ANSWER = (
    '{"response":"prepare","statement":{"connectionId":"%s","id":4,"signature":{"columns":[{"ordinal":0,'
    '"label":"channel","nullable":1,"type":{"type":"scalar","id":12,"name":"VARCHAR","rep":"STRING"}},'
    '{"ordinal":1,"label":"added","nullable":0,"type":{"type":"scalar","id":-5,"name":"BIGINT","rep":"NUMBER"}}],'
    '"parameters":[{"signed":false,"precision":0,"scale":0,"parameterType":12,"typeName":"VARCHAR",'
    '"className":"java.lang.String","name":"?0"},{"signed":true,"precision":0,"scale":0,"parameterType":4,'
    '"typeName":"INTEGER","className":"java.lang.Integer","name":"?1"}],"cursorFactory":{"style":"LIST"}}}}'
).replace("%s", CID)

EXECUTE_RESULTS = (
    '{"response":"executeResults","missingStatement":false,"results":[{"response":"resultSet",'
    '"connectionId":"%s","statementId":3,"ownStatement":false,"signature":{"columns":['
    '{"ordinal":0,"label":"__time","nullable":0,"type":{"type":"scalar","id":93,"name":"TIMESTAMP","rep":"LONG"}},'
    '{"ordinal":1,"label":"channel","nullable":1,"type":{"type":"scalar","id":12,"name":"VARCHAR","rep":"STRING"}},'
    '{"ordinal":2,"label":"added","nullable":0,"type":{"type":"scalar","id":-5,"name":"BIGINT","rep":"NUMBER"}},'
    '{"ordinal":3,"label":"delta","nullable":1,"type":{"type":"scalar","id":8,"name":"DOUBLE","rep":"DOUBLE"}},'
    '{"ordinal":4,"label":"isRobot","nullable":1,"type":{"type":"scalar","id":16,"name":"BOOLEAN","rep":"BOOLEAN"}},'
    '{"ordinal":5,"label":"page","nullable":1,"type":{"type":"scalar","id":12,"name":"VARCHAR","rep":"STRING"}},'
    '{"ordinal":6,"label":"tags","nullable":1,"type":{"type":"array","id":2003,"name":"ARRAY","rep":"ARRAY",'
    '"component":{"type":"scalar","id":12,"name":"VARCHAR","rep":"STRING"}}},'
    '{"ordinal":7,"label":"day","nullable":1,"type":{"type":"scalar","id":91,"name":"DATE","rep":"INTEGER"}}],'
    '"parameters":[],"cursorFactory":{"style":"LIST"}},"firstFrame":{"done":false,"rows":['
    '[1442016000000,"#de.wikipedia",0,0.0,true,null,[],16690],'
    '[1442016060000,"#en.wikipedia",7,0.5,false,"page 1",["a","b"],16691]]},"updateCount":-1}]}'
).replace("%s", CID)

ERROR_ANSWER = (
    '{"response":"error","exceptions":["java.lang.RuntimeException: QueryInterruptedException: Encountered '
    '\\"SELEC\\" at line 1, column 1.\\n\\tat mock"],"errorMessage":"QueryInterruptedException: Encountered '
    '\\"SELEC\\" at line 1, column 1.","errorCode":-1,"sqlState":"00000","severity":"UNKNOWN"}'
)


def sent(key: str) -> dict:
    return orjson.loads(SENT[key] % CID)


def test_requests_equal_the_drivers_bodies() -> None:
    assert proto.open_connection(CID, {"user": "alice", "password": "secret"}) == sent("open")
    assert proto.connection_sync(CID) == sent("sync")
    assert proto.create_statement(CID) == sent("create")
    assert proto.prepare_and_execute(CID, 3, SQL) == sent("pae")
    assert proto.fetch(CID, 3, 100, 60) == sent("fetch")
    assert proto.close_statement(CID, 3) == sent("close_st")
    assert proto.prepare(CID, PSQL) == sent("prepare")
    assert proto.close_connection(CID) == sent("close_conn")


def test_execute_echoes_the_prepared_handle_with_typed_values() -> None:
    statement = proto.decode(PREPARE_ANSWER.encode(), "prepare")["statement"]
    message = proto.execute(
        statement, proto.parameter_values(["#en.wikipedia", 5_000_000_000]), first_frame_rows=25
    )
    assert message["request"] == "execute" and "connectionId" not in message
    assert message["statementHandle"]["id"] == 4
    assert message["maxRowCount"] == 25
    assert message["parameterValues"] == [
        {"type": "STRING", "value": "#en.wikipedia", "componentType": None},
        {"type": "LONG", "value": 5000000000, "componentType": None},
    ]
    assert orjson.loads(proto.encode(message)) == message


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (5_000_000_000, {"type": "LONG", "value": 5000000000}),
        (None, {"type": "OBJECT", "value": None}),
        (dt.datetime(2015, 9, 12), {"type": "JAVA_SQL_TIMESTAMP", "value": 1442016000000}),
        (
            dt.datetime(2015, 9, 11, 20, tzinfo=dt.timezone(dt.timedelta(hours=-4))),
            {"type": "JAVA_SQL_TIMESTAMP", "value": 1442016000000},
        ),
        (1.5, {"type": "DOUBLE", "value": 1.5}),
        (True, {"type": "BOOLEAN", "value": True}),
        (dt.date(2015, 9, 12), {"type": "JAVA_SQL_DATE", "value": 16690}),
        ("abc", {"type": "STRING", "value": "abc"}),
    ],
)
def test_typed_values_match_the_recorded_encodings(value, wire) -> None:
    assert proto.typed_value(value) == {**wire, "componentType": None}


@pytest.mark.parametrize("bad", [{"a": 1}, object(), float("nan")])
def test_unsendable_parameters_are_refused_clearly(bad) -> None:
    from pm_notebook.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="cannot be sent to SQL"):
        proto.typed_value(bad)


def test_execute_results_give_declared_columns_and_transposed_frames() -> None:
    answer = proto.decode(EXECUTE_RESULTS.encode(), "executeResults")
    result_set = answer["results"][0]
    columns = proto.signature_columns(result_set["signature"])
    assert [c.name for c in columns] == [
        "__time",
        "channel",
        "added",
        "delta",
        "isRobot",
        "page",
        "tags",
        "day",
    ]
    assert columns[0] == ColumnSpec("__time", "TIMESTAMP", None, nullable=False)
    assert columns[6] == ColumnSpec("tags", "ARRAY", "VARCHAR", nullable=True)
    data, rows, done = proto.frame_columns(result_set["firstFrame"], len(columns))
    assert rows == 2 and done is False
    assert list(data[0]) == [1442016000000, 1442016060000]
    assert list(data[5]) == [None, "page 1"]
    assert list(data[6]) == [[], ["a", "b"]]


def test_error_answer_becomes_query_error_with_the_servers_text() -> None:
    with pytest.raises(QueryError) as info:
        proto.decode(ERROR_ANSWER.encode(), "executeResults", sql="SELEC 1")
    err = info.value
    # the exception class Druid's errorMessage starts with is framing, not the server's text
    assert err.server_message == 'Encountered "SELEC" at line 1, column 1.'
    assert "\tat " not in str(err) and "java.lang" not in str(err)
    assert (
        err.position == (1, 1) and err.sqlstate == "00000" and err.error_code == -1 and err.sql == "SELEC 1"
    )


def test_druid_33_error_chain_keeps_the_first_links_message() -> None:
    """Druid 33's Avatica errorMessage is the exception chain (recorded from the broker): the user reads
    the first link's message, the one Druid's SQL API answers as its errorMessage."""
    chain = (
        "QueryInterruptedException: Column 'nope' not found in any table (line [1], column [8]) -> "
        "DruidException: Column 'nope' not found in any table (line [1], column [8]) -> ValidationException: "
        "org.apache.calcite.runtime.CalciteContextException: From line 1, column 8 to line 1, column 11: "
        "Column 'nope' not found in any table -> SqlValidatorException: Column 'nope' not found in any table"
    )
    answer = orjson.dumps(
        {
            "response": "error",
            "exceptions": ["QueryInterruptedException{msg=Column 'nope' ..., host=null}\n\tat x"],
            "errorMessage": chain,
            "errorCode": -1,
            "sqlState": "00000",
            "severity": "UNKNOWN",
            "rpcMetadata": {"response": "rpcMetadata", "serverAddress": "localhost:8082"},
        }
    )
    with pytest.raises(QueryError) as info:
        proto.decode(answer, "executeResults", sql="SELECT nope FROM t")
    assert info.value.server_message == "Column 'nope' not found in any table (line [1], column [8])"
    assert info.value.position == (1, 8)


def test_unauthorized_error_becomes_authentication_error() -> None:
    err = from_avatica(
        {
            "response": "error",
            "exceptions": ["x"],
            "errorMessage": "Unauthorized",
            "errorCode": 2,
            "sqlState": "00002",
            "severity": "ERROR",
        }
    )
    assert isinstance(err, AuthenticationError)
    assert "client secret" in str(err)


def test_unexpected_answers_are_refused() -> None:
    with pytest.raises(QueryError, match="not JSON"):
        proto.decode(b"{not json", "fetch")
    with pytest.raises(QueryError, match="'prepare' to a 'fetch'"):
        proto.decode(PREPARE_ANSWER.encode(), "fetch")


@pytest.mark.parametrize(
    "framed",
    [
        "org.apache.calcite.avatica.AvaticaSqlException: Error -1 (00000) : "
        'Error while executing SQL "SELEC 1": Remote driver error: '
        'QueryInterruptedException: Encountered "SELEC" at line 1, column 1.',
        "java.sql.SQLException: Error -1 (00000) : Remote driver error: "
        'QueryInterruptedException: Encountered "SELEC" at line 1, column 1.'
        "\n\tat org.apache.calcite.avatica.Helper.createException(Helper.java:54)",
    ],
)
def test_java_framing_is_stripped_to_the_servers_text(framed: str) -> None:
    assert server_text(framed) == 'Encountered "SELEC" at line 1, column 1.'
