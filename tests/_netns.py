"""Simulated hosts: network namespaces of the test's own, each joined to this one by a veth pair.

Host ``i`` (1-based) is the namespace ``ssa<tag>h<i>``; its end of the pair
has ``10.<net>.<i>.2/30`` and this namespace's end ``10.<net>.<i>.1/30``, so a
server listening on ``10.<net>.<i>.1`` is reached from host ``i`` over its
own link, which :meth:`Lan.cut` takes down (a network partition) and
:meth:`Lan.mend` brings back. Needs root and iproute2 (``ip``); every
command is bounded by :data:`IP_TIMEOUT_S`. :meth:`Lan.remove` deletes
everything (the namespace's end of a pair goes with it, and its peer too).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import uuid

IP_TIMEOUT_S = 10

__all__ = ["IP_TIMEOUT_S", "Lan", "unavailable"]


def _ip(*args: str, namespace: str | None = None) -> None:
    argv = ["ip", *args] if namespace is None else ["ip", "netns", "exec", namespace, "ip", *args]
    subprocess.run(argv, check=True, capture_output=True, timeout=IP_TIMEOUT_S)


def unavailable() -> str | None:
    """Why namespaces cannot be made here (``None``: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "network namespaces need iproute2 (ip)"
    probe = f"ssaprobe{uuid.uuid4().hex[:6]}"
    try:
        _ip("netns", "add", probe)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        return f"ip netns add is refused here: {exc}"
    _ip("netns", "del", probe)
    return None


class Lan:
    """``count`` simulated hosts (see the module doc).

    Raises:
        subprocess.CalledProcessError: an ``ip`` command failed (what was
            made is removed first).
    """

    def __init__(self, count: int) -> None:
        self._tag = uuid.uuid4().hex[:6]
        self.net = random.randint(100, 250)  # a subnet of 10/8, not a secret
        self.count = count
        self._made: list[str] = []
        try:
            for i in range(1, count + 1):
                self._make(i)
        except BaseException:
            self.remove()
            raise

    def namespace(self, i: int) -> str:
        """Host ``i``'s namespace name."""
        return f"ssa{self._tag}h{i}"

    def server_address(self, i: int) -> str:
        """This namespace's address on host ``i``'s link (where host ``i`` finds the server)."""
        return f"10.{self.net}.{i}.1"

    def host_address(self, i: int) -> str:
        """Host ``i``'s own address."""
        return f"10.{self.net}.{i}.2"

    @property
    def network(self) -> str:
        """Every link's addresses, as one CIDR."""
        return f"10.{self.net}.0.0/16"

    def _link(self, i: int) -> str:
        return f"s{self._tag}b{i}"

    def _make(self, i: int) -> None:
        namespace, here, there = self.namespace(i), f"s{self._tag}a{i}", self._link(i)
        _ip("netns", "add", namespace)
        self._made.append(namespace)
        _ip("link", "add", here, "type", "veth", "peer", "name", there)
        _ip("link", "set", there, "netns", namespace)
        _ip("addr", "add", f"{self.server_address(i)}/30", "dev", here)
        _ip("link", "set", here, "up")
        _ip("addr", "add", f"{self.host_address(i)}/30", "dev", there, namespace=namespace)
        _ip("link", "set", there, "up", namespace=namespace)
        _ip("link", "set", "lo", "up", namespace=namespace)

    def cut(self, i: int) -> None:
        """Partition host ``i``: its link goes down (nothing passes either way)."""
        _ip("link", "set", self._link(i), "down", namespace=self.namespace(i))

    def mend(self, i: int) -> None:
        """End host ``i``'s partition (the link and its address come back)."""
        _ip("link", "set", self._link(i), "up", namespace=self.namespace(i))

    def run_argv(self, i: int, argv: list[str]) -> list[str]:
        """``argv`` run inside host ``i``'s namespace."""
        return ["ip", "netns", "exec", self.namespace(i), *argv]

    def remove(self) -> None:
        """Delete every namespace made (idempotent; their veth pairs go with them)."""
        while self._made:
            namespace = self._made.pop()
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True,
                           timeout=IP_TIMEOUT_S, check=False)
