"""The ``crawldeck`` command (issue #24 item 7): a layer of its own over the crawler
(``crawldeck.core``) and the console (``crawldeck.tui``), which never imports it.

``launch`` is the console script's entry point, ``main`` its dispatch and ``parser``
the argument parser, built from one module per command (``crawl``, ``demo``,
``worker``, ``recrawl``, ``export``, ``links``, ``show``, ``stats``, ``config``,
``attach``: each its ``--help`` texts, its arguments and its ``run``). Beside them:
``flags`` (the flags several commands share), ``output`` (the exit codes and what the
commands print alike), ``runner`` (the run of a crawl, for ``crawl``, ``demo`` and
``recrawl``), ``cluster`` (a crawl with ``--workers`` or ``--redis``), ``headless``
(the ``--no-ui`` lines) and ``docgen`` (``docs/cli.md`` and ``docs/config.md`` from the
parser and the config).
"""
