"""`python -m staffstore`: the same as the `staffstore` command."""

from .cli import main

raise SystemExit(main())
