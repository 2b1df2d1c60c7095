"""The asyncio HTTP example (examples/async_server.py), driven by many concurrent clients."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from examples.async_server import serve

CLIENTS = 20
WORKERS = [f"agent:main:subagent:w{i}" for i in range(CLIENTS)]
BUDGET_S = 30.0


async def _request(port: int, method: str, target: str) -> tuple[int, Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{method} {target} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n".encode())
    await writer.drain()
    response = await reader.read()
    writer.close()
    await writer.wait_closed()
    head, _, body = response.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body)


def test_twenty_concurrent_clients_each_get_their_notice_once(tmp_path: Path) -> None:
    async def main() -> None:
        started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        server = asyncio.create_task(serve(str(tmp_path / "state.sqlite"), 0, started, stop))
        try:
            port = await asyncio.wait_for(started, BUDGET_S)

            async def each(method: str, route: str) -> list[tuple[int, Any]]:
                return list(await asyncio.gather(*(
                    _request(port, method, f"/{route}/{worker}") for worker in WORKERS)))

            assert await each("POST", "watch") == [(200, True)] * CLIENTS
            waiting = asyncio.gather(*(  # long polls, answered by the coroutine on_wake
                _request(port, "GET", "/wait/agent:main:main?timeout=20")
                for _ in range(CLIENTS)))
            assert await each("POST", "human") == [(200, True)] * CLIENTS
            assert await waiting == [(200, True)] * CLIENTS
            assert await _request(port, "POST", "/bogus/agent:main:main") == (
                404, {"error": "no such route"})  # an unknown action drains nothing
            status, notices = await _request(port, "POST", "/drain/agent%3Amain%3Amain")
            assert status == 200
            assert len(notices) == CLIENTS  # one per target, however many changes
            assert all(f'"{worker}"' in "".join(notices) for worker in WORKERS)
            assert await _request(port, "POST", "/drain/agent:main:main") == (200, [])
            status, body = await _request(port, "GET", f"/status/{WORKERS[0]}?since=0")
            assert status == 200
            assert [e["kind"] for e in body["stateChanges"]["events"]] == [
                "human_direct_message"]
            assert (await _request(port, "POST", "/human/"))[0] == 404
            status, body = await _request(port, "POST", "/human/%00")
            assert status == 400
            assert "key" in body["error"]
            assert (await _request(port, "GET", "/status/x?since=soon"))[0] == 400
            for query, says in (("since=abc", "since must be a whole number >= 0 (a "
                                 "stateVersion), not 'abc'"),
                                ("since=-1", "since must be a whole number >= 0"),
                                ("since=%C2%B2", "since must be a whole number >= 0")):
                status, body = await _request(port, "GET", f"/status/{WORKERS[0]}?{query}")
                assert status == 400  # "invalid literal for int()" before
                assert body["error"].startswith(says), body
            for query in ("timeout=abc", "timeout=nan", "timeout=-1"):
                status, body = await _request(port, "GET", f"/wait/agent:main:main?{query}")
                assert status == 400
                assert body["error"].startswith("timeout must be a number of seconds >= 0")
            assert (await _request(port, "POST", "/human/%ff"))[0] == 400  # not UTF-8
        finally:
            stop.set()
            await asyncio.wait_for(server, BUDGET_S)

    asyncio.run(asyncio.wait_for(main(), BUDGET_S))


def test_two_copies_on_one_file_answer_each_others_long_polls(tmp_path: Path) -> None:
    """Issue 25 item 14: the example opened without ``hosts=``, so a long poll on one
    copy never heard of a change made through the other."""

    async def main() -> None:
        db = str(tmp_path / "state.sqlite")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        starts = [loop.create_future() for _ in range(2)]
        servers = [asyncio.create_task(serve(db, 0, started, stop)) for started in starts]
        try:
            a, b = [await asyncio.wait_for(s, BUDGET_S) for s in starts]
            for first, second in ((a, b), (b, a)):
                worker = f"agent:main:subagent:from-{second}"
                assert await _request(second, "POST", f"/watch/{worker}") == (200, True)
                waiting = asyncio.create_task(
                    _request(first, "GET", "/wait/agent:main:main?timeout=10"))
                await asyncio.sleep(0)  # the poll is in flight before the change
                assert await _request(second, "POST", f"/human/{worker}") == (200, True)
                # Answered well before the poll's own 10 s end (which answers from the
                # durable notice anyway).
                assert await asyncio.wait_for(waiting, 5.0) == (200, True)
                status, drained = await _request(first, "POST", "/drain/agent:main:main")
                assert status == 200
                assert len(drained) == 1
        finally:
            stop.set()
            await asyncio.wait_for(asyncio.gather(*servers), BUDGET_S)

    asyncio.run(main())
