"""``python -m actors``: the ``ssa`` command line."""

from actors.cli.command import main

raise SystemExit(main())
