"""The upstream service: the monitors of adopted sessions and what feeds them.

What lives here: the upstream service (adoption, scan leases, the scan driver
over the links of adopted sessions), one monitor actor per upstream link,
file-notification and catalog feeds, the change test of a link's transcript,
and where a link's transcript is.

May import: :mod:`actors.engine`, :mod:`actors.upstream` (the pure readers and
classifiers), :mod:`actors.config`, :mod:`actors.errors` and :mod:`persistence`'s public names.
Never the facade, the command line or the test kit.
"""
