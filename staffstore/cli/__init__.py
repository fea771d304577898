"""The `staffstore` command line (typer): parse, make one library call, print.

Owns the app and the shared plumbing (app.py) and the command groups (claims.py, jobs.py,
replay.py, serve.py), which app.py loads by name through EXTENSIONS as they are used
(lazy.py). May import any package of staffstore; nothing imports the CLI except
`python -m staffstore` (__main__.py) and the console script.
"""

from .app import app, main

__all__ = ["app", "main"]
