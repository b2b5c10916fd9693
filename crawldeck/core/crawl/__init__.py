"""The crawl loop and what assembles it: the engine, retries, recording, the observer, side
requests (sitemaps), resume, statistics, snapshots, metrics and the attach socket (issue
#24 item 2).
"""
