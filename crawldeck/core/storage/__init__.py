"""What a crawl writes and reads back: the SQLite crawl file (``store``), the WARC files
and their writer process, the archiving fetcher, exports and the mirror (issue #24 item
2).
"""
