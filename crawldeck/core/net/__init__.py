"""The network edge: the HTTP fetcher and its transport, DNS, robots.txt fetching,
redirects and cookies, request options, and the parse pool that turns fetched bodies
into links (issue #24 item 2).
"""
