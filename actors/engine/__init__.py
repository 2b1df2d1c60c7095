"""The engine's actors: one per session, per watcher cursor, the waker and hosting.

What lives here: the actor base class, the session and cursor actors, the
waker, the hosting of watchers, the messages between them (frozen msgspec
Structs), the notice text and queue (pure), the gateway's own actor registry,
and what closes gateways left open at exit.

May import: :mod:`actors.errors` and :mod:`persistence`'s public names
(:mod:`persistence.runtime` included). Never the facade, the upstream
monitors, the command line or the test kit.
"""
