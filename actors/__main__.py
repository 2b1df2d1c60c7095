"""``python -m actors``: the ``ssa`` command line."""

from actors.command import main

raise SystemExit(main())
