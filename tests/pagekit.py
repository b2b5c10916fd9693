"""The helpers that ``tests/unit/test_links_page.py`` and
``tests/loopback/test_links_page.py`` share: one subject's tests, split by tier (issue
#24 item 8)."""

from __future__ import annotations

from crawldeck.core.policy.links import Extracted, extract_links

URL = "http://example.test/dir/page.html"


TOKEN = "crawldeck"


HTML = {"Content-Type": "text/html"}


def extract(body: str | bytes) -> Extracted:
    raw = body.encode() if isinstance(body, str) else body
    return extract_links(raw, URL, HTML, TOKEN)


# --- SimHash of the visible text ----------------------------------------------------

ARTICLE = " ".join(
    f"Sentence {i} of the article tells how the river {('rose', 'fell')[i % 2]} "
    f"near bridge {i % 7} during week {i % 11}."
    for i in range(120)
)
