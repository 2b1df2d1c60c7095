"""The README's threaded-server example, driven by several client threads at once."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator

import pytest

from actors import Gateway
from examples.threaded_server import make_server
from tests.conftest import WATCHER

TIMEOUT = 10.0


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


def test_bad_requests_get_a_400_and_the_server_keeps_serving(
    served: tuple[Gateway, int],
) -> None:
    _, port = served
    for path in ("/", "/watch/", "/human/" + "x" * 600):
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST",
                                         data=b"")
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=TIMEOUT).close()
        assert info.value.code == 400
        info.value.close()
    assert _post(port, "/watch/agent:main:worker") is True
