"""PEP 249 compliance of ``Connection.dbapi()`` (our own small suite, in the spirit of the dbapi20 one),
plus ``pandas.read_sql`` on it, against the sandbox."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest
from _sql_transports import TRANSPORTS

from pm_notebook.errors import PMError
from pm_notebook.sql import dbapi


@pytest.fixture(params=TRANSPORTS)
def db(request, conn):
    connection = conn.dbapi(transport=request.param)
    yield connection
    connection.close()


def test_module_globals_and_exception_tree() -> None:
    assert dbapi.apilevel == "2.0"
    assert dbapi.threadsafety in (0, 1, 2, 3)
    assert dbapi.paramstyle == "qmark"
    assert issubclass(dbapi.Warning, Exception)
    assert issubclass(dbapi.Error, Exception) and issubclass(dbapi.Error, PMError)
    for name in ("InterfaceError", "DatabaseError"):
        assert issubclass(getattr(dbapi, name), dbapi.Error)
    for name in (
        "DataError",
        "OperationalError",
        "IntegrityError",
        "InternalError",
        "ProgrammingError",
        "NotSupportedError",
    ):
        assert issubclass(getattr(dbapi, name), dbapi.DatabaseError)
        assert getattr(dbapi.Connection, name) is getattr(dbapi, name)
    # IPython shows statement/service errors as their message (see test_jupysql), a bug with its traceback.
    shown = dbapi.ProgrammingError("Column 'x' not found", hint="Check the name.")._render_traceback_()
    assert shown == ["ProgrammingError: Column 'x' not found", "  Hint: Check the name."]
    assert not hasattr(dbapi.InternalError("boom"), "_render_traceback_")
    assert dbapi.Timestamp(2015, 9, 12) == dt.datetime(2015, 9, 12)
    assert dbapi.DateFromTicks(0) == dt.date(1970, 1, 1)


def test_description_rows_and_rowcount(db, demo_tables, duck) -> None:
    sql = f"SELECT caseid, duration, __time FROM {demo_tables['cases']} ORDER BY __time LIMIT 5"
    expected = duck(sql)
    cursor = db.cursor()
    assert cursor.description is None and cursor.rowcount == -1 and cursor.arraysize == 1
    assert cursor.execute(sql) is cursor
    names = [d[0] for d in cursor.description]
    assert names == ["caseid", "duration", "__time"]
    assert all(len(d) == 7 for d in cursor.description)
    assert cursor.description[0][1] == dbapi.STRING
    assert cursor.description[1][1] == dbapi.NUMBER
    assert cursor.description[2][1] == dbapi.DATETIME and cursor.description[2][1] != dbapi.NUMBER
    first = cursor.fetchone()
    assert first[0] == expected["caseid"][0] and first[1] == expected["duration"][0]
    assert first[2] == pd.Timestamp(expected["__time"][0]).tz_localize("UTC").to_pydatetime()
    assert len(cursor.fetchmany()) == 1  # arraysize
    assert len(cursor.fetchmany(2)) == 2
    assert [r[0] for r in cursor.fetchall()] == expected["caseid"].tolist()[4:]
    assert cursor.fetchone() is None and cursor.fetchall() == []
    assert cursor.rowcount == 5


def test_qmark_parameters_and_iteration(db, demo_tables, duck) -> None:
    case = duck(f"SELECT caseid FROM {demo_tables['cases']} ORDER BY caseid LIMIT 1")["caseid"][0]
    cursor = db.cursor()
    cursor.execute(f"SELECT caseid FROM {demo_tables['cases']} WHERE caseid = ?", [case])
    assert [row for row in cursor] == [(case,)]
    with pytest.raises(dbapi.ProgrammingError, match="qmark"):
        cursor.execute("SELECT ?", {"a": 1})
    cursor.executemany(f"SELECT caseid FROM {demo_tables['cases']} WHERE caseid = ?", [[case], ["none"]])


def test_errors_follow_pep_249(db) -> None:
    cursor = db.cursor()
    with pytest.raises(dbapi.Error):
        cursor.fetchone()  # nothing executed yet
    with pytest.raises(dbapi.ProgrammingError) as info:
        cursor.execute("SELEC 1")
    assert info.value.server_message and "java." not in str(info.value)
    cursor.execute('SELECT 1 AS "one"')  # usable after an error
    assert cursor.fetchall() == [(1,)]
    db.commit()
    with pytest.raises(dbapi.NotSupportedError):
        db.rollback()
    cursor.close()
    cursor.close()
    with pytest.raises(dbapi.InterfaceError):
        cursor.execute("SELECT 1")
    db.close()
    db.close()
    with pytest.raises(dbapi.InterfaceError):
        db.cursor()


def test_empty_result_has_a_description(db, demo_tables) -> None:
    cursor = db.cursor()
    cursor.execute(f"SELECT caseid, duration FROM {demo_tables['cases']} WHERE caseid = 'none'")
    assert [d[0] for d in cursor.description] == ["caseid", "duration"]
    assert cursor.fetchall() == [] and cursor.rowcount == 0


def test_pandas_read_sql_uses_it(conn, demo_tables, duck) -> None:
    sql = f"SELECT caseid, duration FROM {demo_tables['cases']} WHERE duration > ? ORDER BY __time"
    threshold = int(duck(f"SELECT MEDIAN(duration) AS m FROM {demo_tables['cases']}")["m"][0])
    with conn.dbapi() as db, pytest.warns(UserWarning, match="SQLAlchemy"):
        frame = pd.read_sql(sql, db, params=[threshold])
    expected = duck(sql, [threshold])
    assert frame["caseid"].tolist() == expected["caseid"].tolist()


def test_module_connect_wraps_a_client(conn) -> None:
    with dbapi.connect(conn, transport="avatica") as db:
        cursor = db.cursor()
        cursor.execute("SELECT 2 AS two")
        assert cursor.fetchone() == (2,)
    with pytest.raises(dbapi.InterfaceError):
        dbapi.connect("not a client")
