"""crawldeck: a polite, fast web crawler with a live terminal console.

Its sub-packages are ``crawldeck.core`` (the crawler, no UI), ``crawldeck.tui`` (the
console and the command line) and ``crawldeck.localweb`` (the built-in demo web the
tests and benchmarks crawl): the folders ``crawldeck/core/``, ``crawldeck/tui/`` and
``crawldeck/localweb/``, one file per module (docs/architecture.md, "Import names").
"""
