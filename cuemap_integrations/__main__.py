"""``python -m cuemap_integrations`` runs the ``cuemap`` command line."""

from .cli import main

raise SystemExit(main())
