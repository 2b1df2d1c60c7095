"""The threaded-server example: several client threads at once, bad requests, and its
documentation page (docs/embedding.md) showing the file as it is."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from actors import Gateway
from examples.threaded_server import make_server
from tests.conftest import WATCHER

TIMEOUT = 10.0
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def served(open_gateway: Callable[..., Gateway]) -> Iterator[tuple[Gateway, int]]:
    """The example server on an ephemeral loopback port; stopped and joined after the test."""
    gw = open_gateway()
    server = make_server(gw)
    serving = threading.Thread(target=server.serve_forever, name="example-server")
    serving.start()
    try:
        yield gw, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        serving.join(TIMEOUT)


def _post(port: int, path: str) -> object:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST", data=b"")
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        return json.loads(response.read())


def test_eight_clients_twenty_changes_each_one_notice_per_target(
    served: tuple[Gateway, int],
) -> None:
    _, port = served
    targets = [f"agent:main:worker-{i}" for i in range(8)]
    for target in targets:
        assert _post(port, f"/watch/{target}") is True
    barrier = threading.Barrier(len(targets), timeout=TIMEOUT)
    failures: list[BaseException] = []

    def client(target: str) -> None:
        try:
            barrier.wait()
            for _ in range(20):
                assert _post(port, f"/human/{target}") is True
        except BaseException as exc:
            failures.append(exc)

    clients = [threading.Thread(target=client, args=(t,)) for t in targets]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join(TIMEOUT)
        assert not thread.is_alive()
    assert failures == []
    drained = _post(port, f"/drain/{WATCHER}")
    assert isinstance(drained, list)
    assert sorted(line.split('"')[1] for line in drained) == sorted(targets)


def _refused(port: int, path: str) -> tuple[int, object]:
    """POST ``path``, expecting an HTTP error: ``(status, decoded JSON body)``."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST", data=b"")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=TIMEOUT).close()
    try:
        assert info.value.headers["Content-Type"] == "application/json"
        return info.value.code, json.loads(info.value.read())
    finally:
        info.value.close()


def test_bad_keys_get_a_400_with_the_reason_and_the_server_keeps_serving(
    served: tuple[Gateway, int],
) -> None:
    _, port = served
    for path in ("/watch/", "/watch", "/human/" + "x" * 600, "/watch/agent:main:%22w%22",
                 "/human/agent:main:%ff"):
        status, body = _refused(port, path)
        assert status == 400, path
        assert isinstance(body, dict)
        assert body["error"]
    assert _post(port, "/watch/agent:main:worker") is True


def test_unknown_routes_get_a_404_and_touch_no_queue(served: tuple[Gateway, int]) -> None:
    gw, port = served
    assert _post(port, "/watch/agent:main:worker") is True
    assert _post(port, "/human/agent:main:worker") is True
    for path in (f"/bogus/{WATCHER}", "/", f"/drainx/{WATCHER}", f"/Drain/{WATCHER}"):
        status, body = _refused(port, path)
        assert status == 404, path
        assert body == {"error": f"no route POST /{path.split('/')[1]}"}
    assert len(gw.pending_notices(WATCHER)) == 1  # /bogus/KEY used to drain it
    for method in ("GET", "PUT", "DELETE"):  # a JSON 405, not the server's HTML page
        request = urllib.request.Request(f"http://127.0.0.1:{port}/drain/{WATCHER}",
                                         method=method)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=TIMEOUT)
        assert refused.value.code == 405
        assert json.loads(refused.value.read()) == {"error": "every route is a POST"}
        refused.value.close()
    assert len(gw.pending_notices(WATCHER)) == 1


def test_keys_are_percent_decoded_and_the_query_string_is_ignored(
    served: tuple[Gateway, int],
) -> None:
    gw, port = served
    assert _post(port, "/watch/agent%3Amain%3Aworker%20one?x=1") is True
    assert _post(port, "/human/agent:main:worker%20one?channel=ignored") is True
    [notice] = gw.pending_notices(WATCHER)
    assert 'sessionKey "agent:main:worker one" changesSince' in notice
    drained = _post(port, "/drain/agent%3Amain%3Amain")
    assert drained == [notice]


def test_the_docs_show_the_example_as_it_is_with_how_to_run_it() -> None:
    readme = (ROOT / "docs" / "embedding.md").read_text()
    source = (ROOT / "examples" / "threaded_server.py").read_text()
    assert f"```python\n{source}```\n" in readme
    assert "python -m examples.threaded_server" in readme
    assert "curl -X POST http://127.0.0.1:8765/watch/agent:main:worker" in readme


# --- issue 25 item 14: the example under many clients and odd requests -------------------


def test_the_listen_backlog_holds_fifty_parallel_clients(served: tuple[Gateway, int]) -> None:
    """The backlog was 5: with 50 parallel clients the kernel counted listen overflows."""
    from examples.threaded_server import BACKLOG

    assert BACKLOG >= 64
    _gw, port = served
    results: list[object] = []
    lock = threading.Lock()

    def client() -> None:
        value = _post(port, "/watch/agent:main:w")
        with lock:
            results.append(value)

    threads = [threading.Thread(target=client) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    assert results == [True] * 50


def test_a_half_sent_request_is_cut_off_and_frees_its_thread(
    open_gateway: Callable[..., Gateway],
) -> None:
    """200 half-sent requests used to hold 203 threads forever."""
    import socket

    gw = open_gateway()
    server = make_server(gw, timeout=0.3)
    serving = threading.Thread(target=server.serve_forever, name="example-server")
    serving.start()
    try:
        port = server.server_address[1]
        for sent in (b"POST /watch/agent:main:w HTTP/1.1\r\nHost: x\r\n",  # never ends
                     b"POST /watch/agent:", b""):  # in the request line; nothing at all
            with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
                sock.sendall(sent)
                sock.settimeout(TIMEOUT)
                data = b""
                while chunk := sock.recv(65536):  # the server closes it after its timeout
                    data += chunk
            head, _, body = data.partition(b"\r\n\r\n")  # closed with 0 bytes before
            assert head.startswith(b"HTTP/1.0 408 "), data
            assert b"Content-Type: application/json" in head
            assert json.loads(body) == {"error": "the request was not sent within 0.3 s"}
        assert _post(port, "/watch/agent:main:w") is True  # it still serves
    finally:
        server.shutdown()
        server.server_close()
        serving.join(TIMEOUT)


def test_head_a_huge_url_and_a_huge_header_are_answered_in_json(
    served: tuple[Gateway, int],
) -> None:
    """They were answered with http.server's HTML error pages."""
    import http.client

    _gw, port = served
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    conn.request("HEAD", "/watch/agent:main:w")
    head = conn.getresponse()
    assert head.status == 405
    assert head.getheader("Content-Type") == "application/json"
    assert head.read() == b""
    conn.close()
    for path, headers, status in (("/watch/" + "x" * 70_000, {}, 414),
                                  ("/watch/agent:main:w", {"X-Big": "y" * 70_000}, 431)):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
        try:
            conn.request("POST", path, body=b"", headers=headers)
            response = conn.getresponse()
            assert response.status == status
            assert response.getheader("Content-Type") == "application/json"
            assert "error" in json.loads(response.read())
        finally:
            conn.close()
