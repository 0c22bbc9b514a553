"""Fair turns among workgroups (:mod:`pm_sandbox.fair`): order by construction, never by time.

The scheduler runs on one event loop, so these tests drive it with asyncio events: who gets a turn, in
which order, is decided by releases the test makes, not by how fast anything runs. The last test shows,
on a real sandbox, that both ports' requests go through the turns.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

import orjson
import pytest
import requests

from pm_sandbox.fair import FairAdmission, FairTurns, workgroup_of

HANG_GUARD = 60.0
T = TypeVar("T")


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` in a thread of its own: a test run may leave an event loop set in the main thread
    (IPython's, a kernel's), and a new loop cannot start where one is running."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # handed to the test's thread
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG_GUARD)
    assert not thread.is_alive(), "hang guard: the event loop did not finish"
    if "error" in out:
        raise out["error"]
    return out["value"]


class _Holder:
    """A task that takes a turn for *workgroup*, records when it got it, and keeps it until :attr:`leave`."""

    def __init__(self, turns: FairTurns, workgroup: str, order: list[str]) -> None:
        self.workgroup = workgroup
        self.entered, self.leave = asyncio.Event(), asyncio.Event()
        self.task = asyncio.create_task(self._run(turns, order))

    async def _run(self, turns: FairTurns, order: list[str]) -> None:
        async with turns.turn(self.workgroup):
            order.append(self.workgroup)
            self.entered.set()
            await asyncio.wait_for(self.leave.wait(), HANG_GUARD)


async def _queue(turns: FairTurns, workgroups: list[str], order: list[str]) -> list[_Holder]:
    out = []
    for wg in workgroups:
        out.append(_Holder(turns, wg, order))
        await asyncio.sleep(0)  # let it enter or join its queue before the next one arrives
    return out


async def _drain(holders: list[_Holder]) -> None:
    """With one turn: release whoever holds it, one at a time, until every holder has had its turn."""
    pending = list(holders)
    while pending:
        await asyncio.wait_for(
            asyncio.wait(
                [asyncio.ensure_future(h.entered.wait()) for h in pending], return_when="FIRST_COMPLETED"
            ),
            HANG_GUARD,
        )
        [holder] = [h for h in pending if h.entered.is_set()]  # one turn: never two holders at once
        holder.leave.set()
        await asyncio.wait_for(holder.task, HANG_GUARD)
        pending.remove(holder)


def test_a_quiet_workgroup_gets_the_next_turn_before_a_busy_ones_queue():
    async def main() -> list[str]:
        turns = FairTurns(1, slice_seconds=3600)  # no slice ends here: only releases free the turn
        order: list[str] = []
        holders = await _queue(turns, ["busy", "busy", "busy", "busy", "quiet"], order)
        assert order == ["busy"]
        assert turns.state()["waiting_by_workgroup"] == {"busy": 3, "quiet": 1}
        await _drain(holders)
        return order

    assert _run(main()) == ["busy", "quiet", "busy", "busy", "busy"]


def test_workgroups_alternate_while_both_wait():
    async def main() -> list[str]:
        turns = FairTurns(1, slice_seconds=3600)
        order: list[str] = []
        await _drain(await _queue(turns, ["a", "a", "a", "a", "b", "b", "b"], order))
        return order

    assert _run(main()) == ["a", "b", "a", "b", "a", "b", "a"]


def test_several_turns_go_to_the_workgroup_holding_fewest():
    async def main() -> list[str]:
        turns = FairTurns(2, slice_seconds=3600)
        order: list[str] = []
        holders = await _queue(turns, ["a", "a", "a", "a", "b"], order)
        assert order == ["a", "a"]  # two turns, both taken by a
        holders[0].leave.set()  # a frees one: b holds none, a still holds one → b goes first
        await asyncio.wait_for(holders[4].entered.wait(), HANG_GUARD)
        assert order == ["a", "a", "b"]
        for h in holders:
            h.leave.set()
        await asyncio.wait_for(asyncio.gather(*(h.task for h in holders)), HANG_GUARD)
        return order

    assert _run(main()) == ["a", "a", "b", "a", "a"]


def test_a_turn_held_past_its_slice_stops_blocking_the_others():
    async def main() -> None:
        turns = FairTurns(1, slice_seconds=0.05)
        order: list[str] = []
        [long] = await _queue(turns, ["long"], order)
        [short] = await _queue(turns, ["short"], order)
        # the long one does not let go; once its slice ends the short one runs anyway
        await asyncio.wait_for(short.entered.wait(), HANG_GUARD)
        assert not long.leave.is_set() and order == ["long", "short"]
        long.leave.set()
        short.leave.set()
        await asyncio.wait_for(asyncio.gather(long.task, short.task), HANG_GUARD)
        assert turns.state()["waiting"] == 0

    _run(main())


def test_a_request_cancelled_while_waiting_takes_no_turn():
    async def main() -> list[str]:
        turns = FairTurns(1, slice_seconds=3600)
        order: list[str] = []
        [first, gone, last] = await _queue(turns, ["a", "b", "c"], order)
        gone.task.cancel()  # the client left while it waited
        with pytest.raises(asyncio.CancelledError):
            await gone.task
        await _drain([first, last])
        assert turns.state() == {"turns": 1, "active": 0, "waiting": 0, "waiting_by_workgroup": {}}
        return order

    assert _run(main()) == ["a", "c"]


def test_turns_default_to_two_per_processor_and_refuse_nonsense():
    import os

    assert FairTurns().turns == 2 * (os.cpu_count() or 1)
    for bad in ({"turns": -1}, {"slice_seconds": 0}, {"slice_seconds": float("nan")}):
        with pytest.raises(ValueError):
            FairTurns(**bad)


def _scope(authorization: bytes | None = None) -> dict:
    headers = [(b"authorization", authorization)] if authorization is not None else []
    return {"type": "http", "method": "POST", "path": "/x", "headers": headers}


def _jwt(claims: dict) -> bytes:
    part = base64.urlsafe_b64encode(orjson.dumps(claims)).rstrip(b"=")
    return b"eyJhbGciOiJSUzI1NiJ9." + part + b".c2ln"


@pytest.mark.parametrize(
    ("authorization", "body", "expected"),
    [
        (b"Basic " + base64.b64encode(b"wg-1:secret"), None, "wg-1"),
        (b"basic " + base64.b64encode(b"wg-1:"), None, "wg-1"),
        (b"Bearer " + _jwt({"azp": "wg-2", "sub": "x"}), None, "wg-2"),
        (b"Bearer " + _jwt({"sub": "x"}), None, None),
        (b"Bearer " + _jwt({"azp": 7}), None, None),
        (b"Bearer not-a-token", None, None),
        (b"Bearer a.%%%.b", None, None),
        (b"Basic ***", None, None),
        (None, b'{"request":"fetch","connectionId":"c-1","statementId":1}', "owner-of-c-1"),
        (None, b'{"request":"execute","statementHandle":{"connectionId":"c-1","id":2}}', "owner-of-c-1"),
        (None, b'{"request":"fetch","connectionId":"unknown"}', None),
        (None, b'{"request":"openConnection","connectionId":"new","info":{"user":"wg-3"}}', "wg-3"),
        (None, b'{"request":"openConnection","info":{"user":"wg-3","password":"p"}}', "wg-3"),
        (None, b"not json at all", None),
        (None, None, None),
    ],
)
def test_the_workgroup_a_request_claims(authorization, body, expected):
    owners = {"c-1": "owner-of-c-1"}
    assert workgroup_of(_scope(authorization), body, owners.get) == expected


def test_a_peeked_body_reaches_the_app_whole():
    """The middleware reads a small Avatica body to find its workgroup; the app still receives all of it."""
    seen: dict = {}

    async def app(scope, receive, send):
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        seen["body"] = b"".join(chunks)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    claimed: list = []

    def identify(scope, body):
        claimed.append(body)
        return "wg"

    body = b'{"request":"fetch","connectionId":"c-1"}'
    parts = [body[:10], body[10:25], body[25:]]

    async def main() -> None:
        middleware = FairAdmission(app, FairTurns(1), identify, peek_paths=("/druid/v2/sql/avatica",))
        incoming = [
            {"type": "http.request", "body": p, "more_body": i < len(parts) - 1} for i, p in enumerate(parts)
        ]

        async def receive():
            return incoming.pop(0)

        sent: list = []

        async def send(message):
            sent.append(message)

        scope = {
            "type": "http",
            "method": "POST",
            "path": "/druid/v2/sql/avatica/",
            "headers": [(b"content-length", str(len(body)).encode())],
        }
        await middleware(scope, receive, send)
        assert sent[0]["status"] == 200

    _run(main())
    assert seen["body"] == body and claimed == [body]


def test_both_ports_take_turns(sandbox_factory):
    """With one turn that no slice frees, a held demo statement keeps it: second's REST call and SQL query
    wait for it (seen in the sandbox's stats), and are answered once the statement is released."""
    sb = sandbox_factory(extra_args=["--fair-turns", "1", "--fair-slice", "3600"])
    demo, second = sb.workgroups["demo"], sb.workgroups["second"]
    sb.hold(demo.client_id)
    answers: dict[str, requests.Response] = {}

    def druid(who: str, wg) -> None:
        answers[who] = requests.post(
            sb.sql_url + "/druid/v2/sql/",
            json={"query": "SELECT 1 AS x"},
            auth=(wg.client_id, wg.client_secret),
            timeout=120,
        )

    held = threading.Thread(target=druid, args=("demo", demo), daemon=True)
    held.start()
    _poll(lambda: sb.held()["statements"]["held"] == 1, "demo's statement held")
    waiting = threading.Thread(target=druid, args=("second", second), daemon=True)
    waiting.start()
    _poll(lambda: sb.stats()["fair_turns"]["waiting_by_workgroup"] == {second.client_id: 1}, "second waits")
    assert "second" not in answers
    sb.release()
    for t in (held, waiting):
        t.join(HANG_GUARD)
    assert answers["demo"].status_code == 200 and answers["second"].json() == [{"x": 1}]
    assert sb.stats()["fair_turns"]["waiting"] == 0


def _poll(condition, what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD
    while not condition():
        assert time.monotonic() < deadline, f"hang guard: {what}"
        time.sleep(0.02)
