"""The SQL port reads the query context as Druid does, from the SQL API's ``context`` object and from
Avatica's ``openConnection`` properties: the errors and limits are checked on the wire, with no client in
between.

The server is ``numbers_sql`` (tests/conftest.py), whose ``numbers`` table holds 100,001 rows
(``n`` = 0 … 100,000).
"""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
import requests

NUMBERS = '"numbers"'
IN_ALL = f"SELECT COUNT(*) AS c FROM {NUMBERS} WHERE n IN (SELECT n FROM {NUMBERS})"
JOIN_ALL = f"SELECT COUNT(*) AS c FROM {NUMBERS} a JOIN (SELECT n FROM {NUMBERS}) b ON a.n = b.n"
LIMIT_MESSAGE = (
    "Cannot issue the query, subqueries generated results beyond maximum[100000] rows. Try setting the "
    "'maxSubqueryBytes' in the query context to 'auto' for enabling byte based limit, which chooses an "
    "optimal limit based on memory size and result's heap usage or manually configure the values of either "
    "'maxSubqueryBytes' or 'maxSubqueryRows' in the query context. Manually alter the value carefully as it "
    "can cause the broker to go out of memory."
)


@pytest.fixture
def post(numbers_sql):
    auth = (numbers_sql.client_id, numbers_sql.client_secret)

    def send(sql: str, **context) -> requests.Response:
        body = {"query": sql, "context": context}
        return requests.post(numbers_sql.url + "/druid/v2/sql/", json=body, auth=auth, timeout=120)

    return send


class Avatica:
    """Raw Avatica JSON calls on one connection opened with the given properties."""

    def __init__(self, numbers_sql, **properties: str) -> None:
        self.url = numbers_sql.url + "/druid/v2/sql/avatica/"
        self.cid = str(uuid.uuid4())
        info = {"user": numbers_sql.client_id, "password": numbers_sql.client_secret, **properties}
        assert self.call({"request": "openConnection", "connectionId": self.cid, "info": info})[0] == 200

    def call(self, message: dict) -> tuple[int, dict]:
        r = requests.post(self.url, json=message, timeout=120)
        return r.status_code, r.json()

    def query(self, sql: str) -> tuple[int, dict]:
        status, created = self.call({"request": "createStatement", "connectionId": self.cid})
        assert status == 200, created
        return self.call(
            {
                "request": "prepareAndExecute",
                "connectionId": self.cid,
                "statementId": created["statementId"],
                "sql": sql,
                "maxRowsInFirstFrame": 100,
                "maxRowCount": -1,
            }
        )

    def close(self) -> None:
        self.call({"request": "closeConnection", "connectionId": self.cid})


@pytest.mark.parametrize("sql", [IN_ALL, JOIN_ALL], ids=["in-subquery", "join-subquery"])
def test_druid_api_refuses_a_subquery_over_max_subquery_rows(post, sql):
    r = post(sql)
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["error"] == "Resource limit exceeded"
    assert body["errorCode"] == "legacyQueryException"
    assert body["category"] == "INVALID_INPUT" and body["persona"] == "OPERATOR"
    assert body["errorClass"] == "org.apache.druid.query.ResourceLimitExceededException"
    assert body["context"]["legacyErrorCode"] == "Resource limit exceeded"
    assert body["errorMessage"] == LIMIT_MESSAGE
    raised = post(sql, maxSubqueryRows=100_001)
    assert raised.status_code == 200, raised.text
    assert raised.json() == [{"c": 100_001}]


def test_druid_api_counts_distinct_values_of_an_in_subquery(post):
    # 100,001 rows but 50,001 distinct values (0 … 50,000): Calcite plans IN as a join on the distinct values
    sql = f"SELECT COUNT(*) AS c FROM {NUMBERS} WHERE n IN (SELECT n / 2 FROM {NUMBERS})"
    refused = post(sql, maxSubqueryRows=50_000)
    assert refused.status_code == 400 and "beyond maximum[50000] rows" in refused.json()["errorMessage"]
    assert post(sql, maxSubqueryRows=50_001).json() == [{"c": 50_001}]


def test_the_limit_holds_the_rows_of_all_the_inlined_subqueries_together(post):
    # Druid's broker buffers every subquery of a query under one maxSubqueryRows (query-execution, "query"):
    # two IN subqueries of 50,001 distinct values each are 100,002 rows, each alone under the limit
    half = f"SELECT n / 2 FROM {NUMBERS}"
    sql = f"SELECT COUNT(*) AS c FROM {NUMBERS} WHERE n IN ({half}) AND n + 0 IN ({half})"
    refused = post(sql)
    assert refused.status_code == 400 and "beyond maximum[100000] rows" in refused.json()["errorMessage"]
    assert post(sql, maxSubqueryRows=100_002).json() == [{"c": 50_001}]


def test_a_subquery_on_the_left_of_a_join_is_inlined_too(post):
    # the broker runs any subquery under a join first (query-execution, "join"), left-hand side included
    sql = (
        f"SELECT COUNT(*) AS c FROM (SELECT n FROM {NUMBERS}) AS a "
        f"CROSS JOIN (SELECT COUNT(*) AS k FROM {NUMBERS}) AS b"
    )
    refused = post(sql)
    assert refused.status_code == 400 and "beyond maximum[100000] rows" in refused.json()["errorMessage"]
    assert post(sql, maxSubqueryRows=100_002).json() == [{"c": 100_001}]


def test_avatica_reads_max_subquery_rows_from_the_connection_properties(numbers_sql):
    default = Avatica(numbers_sql)
    raised = Avatica(numbers_sql, maxSubqueryRows="100001")
    try:
        status, error = default.query(IN_ALL)
        assert status == 500 and error["response"] == "error"
        # worded as Druid 33's Avatica endpoint words a query exception (tests/druid/test_protocols.py)
        assert error["errorMessage"] == f"ResourceLimitExceededException: {LIMIT_MESSAGE}"
        assert error["exceptions"][0].startswith("ResourceLimitExceededException{msg=")
        status, answer = raised.query(IN_ALL)
        assert status == 200, answer
        assert answer["results"][0]["firstFrame"]["rows"] == [[100_001]]
    finally:
        default.close()
        raised.close()


def test_avatica_reads_the_timeout_from_the_connection_properties(numbers_sql):
    holds = numbers_sql.engine.holds
    holds.arm("AS held_avatica", times=1)  # waits inside the engine until its time limit ends it
    avatica = Avatica(numbers_sql, timeout="200")
    try:
        status, error = avatica.query("SELECT 1 AS held_avatica")
    finally:
        avatica.close()
        holds.clear()
    assert status == 500
    assert error["errorMessage"].startswith(
        "QueryTimeoutException: Query timeout: the statement ran longer than 0.2 s"
    )
    assert error["exceptions"][0].startswith("QueryTimeoutException{msg=")


def test_druid_api_timeout_is_a_504_timeout(post, numbers_sql):
    holds = numbers_sql.engine.holds
    holds.arm("AS held_api", times=1)
    try:
        r = post("SELECT 1 AS held_api", timeout=200, sqlQueryId="timing-out")
    finally:
        holds.clear()
    assert r.status_code == 504
    assert r.headers["X-Druid-SQL-Query-Id"] == "timing-out"
    body = r.json()
    assert body["category"] == "TIMEOUT" and "ran longer than 0.2 s" in body["errorMessage"]


def test_time_zone_from_properties_and_from_the_sql_api_agree(numbers_sql, post):
    sql = (
        f"SELECT FLOOR(__time TO DAY) AS d, TIME_EXTRACT(MIN(__time), 'HOUR') AS h, COUNT(*) AS c "
        f"FROM {NUMBERS} GROUP BY 1 ORDER BY 1"
    )
    api = post(sql, sqlTimeZone="America/New_York")
    assert api.status_code == 200, api.text
    # local midnights in New York (UTC-4 in late March): 100,001 seconds from 2024-03-30 22:00 UTC
    assert api.json() == [
        {"d": "2024-03-30T04:00:00.000Z", "h": 18, "c": 21_600},
        {"d": "2024-03-31T04:00:00.000Z", "h": 0, "c": 78_401},
    ]
    avatica = Avatica(numbers_sql, sqlTimeZone="America/New_York")
    try:
        status, answer = avatica.query(sql)
    finally:
        avatica.close()
    assert status == 200, answer
    rows = answer["results"][0]["firstFrame"]["rows"]
    assert [r[1:] for r in rows] == [[18, 21_600], [0, 78_401]]


@pytest.mark.parametrize(
    "context",
    [
        {"sqlTimeZone": "Not/AZone"},  # Druid's parser falls back to UTC
        {"useCache": False, "populateCache": "false", "priority": 5, "lane": "reports"},
        {"someExtensionKey": {"nested": [1, 2]}},
    ],
)
def test_keys_the_sandbox_does_not_act_on_are_accepted_silently(post, context):
    r = post(f"SELECT TIME_FLOOR(MIN(__time), 'P1D') AS d FROM {NUMBERS}", **context)
    assert r.status_code == 200, r.text
    assert r.json() == [{"d": "2024-03-30T00:00:00.000Z"}]


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"timeout": "soon"}, "Expected key [timeout] to be in long format, but got [soon]"),
        (
            {"maxSubqueryRows": "many"},
            "Expected key [maxSubqueryRows] to be in integer format, but got [many]",
        ),
        ({"timeout": -1}, "Timeout [timeout] must be a non negative value, but was -1"),
    ],
)
def test_bad_context_values_get_druids_words(post, context, message):
    r = post("SELECT 1 AS x", **context)
    assert r.status_code == 400
    assert r.json()["errorMessage"] == message


# The numbers run from 2024-03-30 22:00:00 UTC, one a second; Paris moves from UTC+1 to UTC+2 at
# 2024-03-31 01:00 UTC (02:00 local becomes 03:00).
WALL_CLOCK_WINDOWS = [
    # (sql, zone, first instant, rows): bounds written as the zone's wall clock
    (
        f"SELECT MIN(__time) AS lo, COUNT(*) AS c FROM {NUMBERS} "
        "WHERE __time >= TIMESTAMP '2024-03-31 00:00:00' AND __time < TIMESTAMP '2024-03-31 04:00:00'",
        "Europe/Paris",
        "2024-03-30T23:00:00.000Z",  # local midnight is UTC+1, 04:00 is UTC+2: three hours apart
        3 * 3600,
    ),
    (
        f"SELECT MIN(__time) AS lo, COUNT(*) AS c FROM {NUMBERS} "
        "WHERE __time >= '2024-03-31 03:00:00' AND __time < '2024-03-31 04:00'",
        "Europe/Paris",
        "2024-03-31T01:00:00.000Z",
        3600,
    ),
    (
        f"SELECT MIN(__time) AS lo, COUNT(*) AS c FROM {NUMBERS} "
        "WHERE __time BETWEEN CAST('2024-03-31 03:00:00' AS TIMESTAMP) AND TIMESTAMP '2024-03-31 03:59:59'",
        "Europe/Paris",
        "2024-03-31T01:00:00.000Z",
        3600,
    ),
    (
        f"SELECT MIN(__time) AS lo, COUNT(*) AS c FROM {NUMBERS} "
        "WHERE __time >= TIMESTAMP '2024-03-31 03:00:00' AND __time < TIMESTAMP '2024-03-31 04:00:00'",
        "+05:30",
        "2024-03-30T22:00:00.000Z",  # 03:30 local is 22:00 UTC, before the first number: from the first
        30 * 60,
    ),
    (
        f"SELECT MIN(__time) AS lo, COUNT(*) AS c FROM {NUMBERS} "
        "WHERE __time >= TIMESTAMP '2024-03-31 03:00:00' AND __time < TIMESTAMP '2024-03-31 04:00:00'",
        None,  # UTC, as before
        "2024-03-31T03:00:00.000Z",
        3600,
    ),
]


@pytest.mark.parametrize(("sql", "zone", "first", "rows"), WALL_CLOCK_WINDOWS)
def test_timestamp_literals_are_the_wall_clock_of_the_sql_time_zone(post, sql, zone, first, rows):
    r = post(sql, **({"sqlTimeZone": zone} if zone else {}))
    assert r.status_code == 200, r.text
    assert r.json() == [{"lo": first, "c": rows}]


TIME_VALUES = (
    "SELECT TIMESTAMP '2024-03-31 00:00:00' AS midnight, TIMESTAMP '2024-03-31 12:00:00' AS noon, "
    "TIME_PARSE('2024-03-31 12:00:00') AS parsed, TIME_PARSE('2024-03-31T12:00:00Z') AS parsed_utc, "
    "TIME_PARSE('2024-03-31T12:00:00+05:30') AS parsed_offset, "
    "TIME_PARSE('31/03/2024 12:00', 'dd/MM/yyyy HH:mm') AS parsed_pattern, "
    "TIME_PARSE('2024-03-31 12:00:00', NULL, 'UTC') AS parsed_in_utc, "
    "TIMESTAMPADD(MONTH, 1, TIMESTAMP '2024-03-15 12:00:00') AS next_month, "
    "TIMESTAMPADD(DAY, 1, TIMESTAMP '2024-03-30 12:00:00') AS next_day, "
    "TIMESTAMP '2024-03-15 12:00:00' + INTERVAL '1' YEAR AS next_year, "
    "TIMESTAMPDIFF(MONTH, TIME_PARSE('2024-03-14T23:30:00Z'), TIME_PARSE('2024-04-14T22:45:00Z')) AS months, "
    "TIMESTAMPDIFF(DAY, TIMESTAMP '2024-03-30 12:00:00', TIMESTAMP '2024-03-31 12:00:00') AS days"
)


@pytest.mark.parametrize(
    ("zone", "want"),
    [
        (
            "Europe/Paris",
            {
                "midnight": "2024-03-30T23:00:00.000Z",
                "noon": "2024-03-31T10:00:00.000Z",  # after the change: UTC+2
                "parsed": "2024-03-31T10:00:00.000Z",
                "parsed_utc": "2024-03-31T12:00:00.000Z",  # the text's own offset wins
                "parsed_offset": "2024-03-31T06:30:00.000Z",
                "parsed_pattern": "2024-03-31T10:00:00.000Z",
                "parsed_in_utc": "2024-03-31T12:00:00.000Z",  # the argument wins over sqlTimeZone
                "next_month": "2024-04-15T10:00:00.000Z",  # 12:00 local a month on, now UTC+2
                "next_day": "2024-03-31T11:00:00.000Z",  # 86,400 s on (13:00 local): Druid ignores DST
                "next_year": "2025-03-15T11:00:00.000Z",
                "months": 1,  # 15 March 00:30 to 15 April 00:45 local: one whole month
                "days": 0,  # 23 hours apart across the change
            },
        ),
        (
            "+05:30",
            {
                "midnight": "2024-03-30T18:30:00.000Z",
                "noon": "2024-03-31T06:30:00.000Z",
                "parsed": "2024-03-31T06:30:00.000Z",
                "parsed_utc": "2024-03-31T12:00:00.000Z",
                "parsed_offset": "2024-03-31T06:30:00.000Z",
                "parsed_pattern": "2024-03-31T06:30:00.000Z",
                "parsed_in_utc": "2024-03-31T12:00:00.000Z",
                "next_month": "2024-04-15T06:30:00.000Z",
                "next_day": "2024-03-31T06:30:00.000Z",
                "next_year": "2025-03-15T06:30:00.000Z",
                "months": 0,  # 15 March 05:00 to 15 April 04:15 local: short of a month
                "days": 1,
            },
        ),
        (
            None,
            {
                "midnight": "2024-03-31T00:00:00.000Z",
                "noon": "2024-03-31T12:00:00.000Z",
                "parsed": "2024-03-31T12:00:00.000Z",
                "parsed_utc": "2024-03-31T12:00:00.000Z",
                "parsed_offset": "2024-03-31T06:30:00.000Z",
                "parsed_pattern": "2024-03-31T12:00:00.000Z",
                "parsed_in_utc": "2024-03-31T12:00:00.000Z",
                "next_month": "2024-04-15T12:00:00.000Z",
                "next_day": "2024-03-31T12:00:00.000Z",
                "next_year": "2025-03-15T12:00:00.000Z",
                "months": 0,  # 14 March 23:30 to 14 April 22:45 UTC: short of a month
                "days": 1,
            },
        ),
    ],
)
def test_time_values_follow_the_sql_time_zone(post, zone, want):
    r = post(TIME_VALUES, **({"sqlTimeZone": zone} if zone else {}))
    assert r.status_code == 200, r.text
    assert r.json() == [want]


def test_current_date_is_the_date_in_the_sql_time_zone(post):
    sql = (
        "SELECT CURRENT_DATE AS d, CAST(CURRENT_DATE AS TIMESTAMP) AS midnight, "
        "TIME_FORMAT(CAST(CURRENT_DATE AS TIMESTAMP), 'HH:mm') AS local_time, "
        "CAST(CURRENT_DATE AS TIMESTAMP) <= CURRENT_TIMESTAMP AS started, "
        "CURRENT_TIMESTAMP < CURRENT_DATE + INTERVAL '1' DAY AS not_over "
        f"FROM {NUMBERS} LIMIT 1"
    )
    zone = dt.timezone(dt.timedelta(hours=14))  # ahead of UTC: its date differs from UTC's for 14 hours a day
    before = dt.datetime.now(zone).date()
    r = post(sql, sqlTimeZone="+14:00")
    after = dt.datetime.now(zone).date()
    assert r.status_code == 200, r.text
    (row,) = r.json()
    day = dt.date.fromisoformat(row["d"][:10])
    assert day in (before, after)  # the date there when the query ran (either side of a midnight)
    assert row["d"] == f"{day.isoformat()}T00:00:00.000Z"
    assert row["midnight"] == f"{(day - dt.timedelta(days=1)).isoformat()}T10:00:00.000Z"  # 00:00 at UTC+14
    assert row["local_time"] == "00:00"
    assert row["started"] is True and row["not_over"] is True


def test_avatica_reads_timestamp_literals_in_the_connection_time_zone(numbers_sql):
    sql = (
        f"SELECT COUNT(*) FROM {NUMBERS} "
        "WHERE __time >= TIMESTAMP '2024-03-31 00:00:00' AND __time < TIMESTAMP '2024-03-31 04:00:00'"
    )
    paris, utc = Avatica(numbers_sql, sqlTimeZone="Europe/Paris"), Avatica(numbers_sql)
    try:
        answers = [conn.query(sql) for conn in (paris, utc)]
    finally:
        paris.close()
        utc.close()
    rows = [answer["results"][0]["firstFrame"]["rows"] for status, answer in answers if status == 200]
    # Paris: 23:00 to 02:00 UTC (three hours across the change); UTC: 00:00 to 04:00
    assert rows == [[[3 * 3600]], [[4 * 3600]]]
