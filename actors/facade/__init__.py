"""The facade: :class:`~actors.facade.gateway.Gateway`, its asyncio face, and their value types.

What lives here: the public embedding API of ``api-contract.md`` (the
``Gateway`` and ``AsyncGateway`` classes, :class:`GatewayConfig`, the value
types, argument validation) and the small collaborators the gateway is built
from. Users import these names from :mod:`actors`, not from here.

May import: :mod:`actors.engine`, :mod:`actors.monitors`,
:mod:`actors.upstream`, :mod:`actors.errors` and :mod:`persistence`'s public
names. Never the command line (:mod:`actors.cli`), the agent integrations
(:mod:`actors.agents`) or the test kit (:mod:`actors.testing`).
"""
