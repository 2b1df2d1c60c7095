"""One simulated host of ``tests/test_hosts.py``: a gateway driven over stdin/stdout.

``python -m tests._netns_child URL host|producer``. A ``host`` hosts
:data:`tests.conftest.WATCHER` and prints ``wake KEY`` for each wake; a
``producer`` does not host. Commands, one per line on stdin, each answered
with one line: ``watch`` (the watcher watches the child: ``watched True``),
``fire N`` (N rapid changes of the child: ``fired OK`` with how many were
recorded), ``drain`` (``drained N`` notices), ``quit`` (``wakes N`` and exit).
Logs go to stderr (warnings and up), so the test may wait for one.
"""

from __future__ import annotations

import logging
import sys
import threading

from actors import Gateway, GatewayConfig
from tests.conftest import CHILD, WATCHER


def main(url: str, role: str) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(name)s %(levelname)s %(message)s")
    out = threading.Lock()
    wakes = 0

    def say(line: str) -> None:
        with out:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def on_wake(key: str) -> None:
        nonlocal wakes
        wakes += 1
        say(f"wake {key}")

    hosts = [WATCHER] if role == "host" else []
    with Gateway.open(url, config=GatewayConfig(), on_wake=on_wake, monitor=False,
                      hosts=hosts) as gw:
        say("ready")
        for command in sys.stdin:
            match command.split():
                case ["watch"]:
                    say(f"watched {gw.watch(WATCHER, CHILD)}")
                case ["fire", count]:
                    done = [gw.human_message(CHILD, channel=f"c{n}") for n in range(int(count))]
                    say(f"fired {sum(e is not None for e in done)}")
                case ["drain"]:
                    say(f"drained {len(gw.drain(WATCHER))}")
                case ["quit"]:
                    break
                case _:
                    say(f"unknown {command.strip()!r}")
    say(f"wakes {wakes}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
