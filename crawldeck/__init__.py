"""crawldeck: a polite, fast web crawler with a live terminal console.

The installed import names are ``crawldeck.core`` (the crawler, no UI),
``crawldeck.tui`` (the console and the command line) and ``crawldeck.localweb`` (the
built-in demo web the tests and benchmarks crawl). In the source tree they are the
top-level folders ``core/``, ``tui/`` and ``localweb/``; this folder holds links to
them so that tools run from the tree (mypy, pytest) see the installed names
(docs/architecture.md, "Import names").
"""
