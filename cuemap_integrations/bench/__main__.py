"""``python -m cuemap_integrations.bench locomo FILE`` (and ``scale``)."""

from . import main

if __name__ == "__main__":  # the guard keeps spawned worker processes from running the CLI again
    raise SystemExit(main())
