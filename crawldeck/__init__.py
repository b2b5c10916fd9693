"""crawldeck: a polite, fast web crawler with a live terminal console.

Its sub-packages are ``crawldeck.core`` (the crawler, no UI), ``crawldeck.cli`` (the
command line), ``crawldeck.tui`` (the console, which the command opens) and
``crawldeck.localweb`` (the built-in demo web the tests and benchmarks crawl): the
folders ``crawldeck/core/``, ``crawldeck/cli/``, ``crawldeck/tui/`` and
``crawldeck/localweb/``, one file per module (docs/architecture.md, "Import names").
"""
