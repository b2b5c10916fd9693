"""The crawl's rules and in-memory structures, with no socket, file or database: URL
normalization, crawl traps, politeness, the frontier, the gate, robots.txt and sitemap
rules, link extraction, ordering, the seen set and the frontier window (issue #24 item
2). The strictly pure ones (no asyncio either) are listed in pyproject.toml's pure-no-io
contract.
"""
