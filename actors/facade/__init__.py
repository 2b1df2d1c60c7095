"""The facade: :class:`~actors.facade.gateway.Gateway`, its asyncio face, and their value types.

What lives here: the public embedding API of ``api-contract.md`` (the
``Gateway`` and ``AsyncGateway`` classes, :class:`GatewayConfig`, the value
types, argument validation) and the small collaborators the gateway is built
from. ``Gateway`` inherits nothing: it owns a :class:`~actors.facade.core.Runtime`
(actors, pools, ``close``; opened by :mod:`~actors.facade.lifecycle`) and one
collaborator per part of the API (:mod:`~actors.facade.sessions`,
:mod:`~actors.facade.recording`, :mod:`~actors.facade.notices`,
:mod:`~actors.facade.hosting_api`, :mod:`~actors.facade.upstream_api`), each
built from the request paths it needs and testable alone; its public methods
delegate to them. Users import these names from :mod:`actors`, not from here.

May import: :mod:`actors.engine`, :mod:`actors.monitors`,
:mod:`actors.upstream`, :mod:`actors.config`, :mod:`actors.errors` and :mod:`persistence`'s public
names. Never the command line (:mod:`actors.cli`), the agent integrations
(:mod:`actors.agents`) or the test kit (:mod:`actors.testing`).
"""
