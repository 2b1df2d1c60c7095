"""``python -m actors``: the ``ssa`` command line."""

from actors.cli import main

raise SystemExit(main())
