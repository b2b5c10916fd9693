"""The fake fetcher against the real one on one scripted site (issue #24 item 8).

The engine's logic is tested fast against ``tests/fakesite.py``'s ``FakeFetcher`` on
virtual time, and end to end against loopback servers with ``AiohttpFetcher``; these
tests check that the two fetchers agree, so that what the fast tier proves of the
engine holds with the real one. ``scripted_site`` is one small web of three hosts and
a port nothing listens on:

* host ``a``: a robots.txt disallowing ``/private``; a home page with ``ETag`` and
  ``Last-Modified`` linking to everything; an ``X-Robots-Tag: noindex`` page; a
  redirect chain with relative ``Location`` values (``/docs/old`` 301 ``moved/one``,
  302 ``../../final?x=1`` setting a cookie); a 404 with an HTML body; a PDF (not HTML: its
  body is skipped by the engine); pages over the ``max_body_bytes`` cap, plain and
  gzip; a small gzip page; a page without ``Content-Type`` (sniffed as HTML); a
  chunked page and a close-delimited one; a short body, one shorter than its
  ``Content-Length`` but over the cap, stacked codings, a bad status line, a header
  line over 8 190 bytes, a connection closed before the head; and,
  not linked (the crawl never asks for them), a 503 with an HTTP-date
  ``Retry-After`` and a server that never answers (a read timeout);
* host ``b``: robots.txt 404, a page linking back to ``a`` and a 307 to ``a``;
* host ``c``: robots.txt 404 and a 429 with ``Retry-After: 2``;
* ``dead``: connection refused (robots.txt and the page).

The fake serves each ``Reply`` or ``Fail`` as scripted; the real side is one
``HTTPTestServer`` a host whose routes write the same reply byte for byte (``wire``:
the status line with the standard phrase, the scripted header lines and nothing else,
the body, chunked when the script says so), and, for a ``Fail``, the bytes that make
the real fetcher fail that way (``Page.raw``).

Fetcher level (``test_the_fetchers_agree_on_every_page``): each URL fetched once
through each fetcher in each of the ways the engine fetches (``MODES``: a page with
``want_body``, robots.txt and side requests whole with a byte cap, a sitemap streamed
to ``on_body``, and a stream whose reader stops), compared field for field (``record``):
every field of ``FetchResult`` is in ``COMPARED`` or in ``NORMALISED`` with the reason,
and ``test_every_field_is_compared_or_normalised`` fails when ``FetchResult`` gains one
that is in neither. An error is compared by class, ``reason``, ``retryable`` and its
whole message.

Crawl level (``test_the_crawls_agree``): the engine crawls the site from ``a``'s home
page once over the fake (virtual time) and once over the real servers, with the same
config; every row of ``pages``, ``links``, ``blocked``, ``frontier``, ``hosts`` and
``page_versions`` must be the same (ports written as host names), but for the columns
in ``CRAWL_NORMALISED``; so must the requests each site received (URL and ``Cookie``).
The fast tier checks that the fake crawl records what the script means
(``test_the_fake_crawl_records_what_the_script_means``), so that the comparison
cannot pass on a site that no longer exercises its cases.

Gaps between the fake and the real fetcher, found here and closed in
``tests/fakesite.py``: the fake's ``reason`` was ``""`` and its ``raw_headers`` empty;
its ``wire_body`` was ``None`` for a content-coded body (the WARC record would have
held the decoded body under ``Content-Encoding: gzip``) and, for a stream, the decoded
bytes cut at the cap instead of the bytes as sent; it sniffed streamed bodies; it
raised "short body" for a body cut at the cap (never read to its end) and for a stream
whose reader had stopped first; four of its error messages were an older aiohttp's
wording. Left as they are, and normalised here:

* ``elapsed_ms`` is virtual time in the fake, wall-clock time in the real one;
* ``request_headers`` is ``()`` in the fake: the session's own fields (Host,
  User-Agent, Accept, Accept-Encoding) are aiohttp's; the extra ``headers`` of a
  request are in ``FakeSite.requests``, compared at the crawl level (the chain's
  ``Cookie``);
* header names in ``headers`` are compared case-insensitively: aiohttp gives the names
  it knows in its own spelling (``ETag`` arrives as ``Etag``); ``raw_headers`` keeps
  them as sent and is compared exactly;
* ``wire_body`` of a content-coded body cut at the cap is, in the real fetcher, what it
  had read before the cut; the fake keeps the whole coded body (the same here, where
  each body arrives in one read);
* an unscripted URL: the fake answers 404 ``text/html`` ``not found``, the test server
  404 ``text/plain``; the crawl test checks that only scripted URLs were asked for;
* not in the script (the fake cannot express them, or they are timing): header bytes
  that are not UTF-8 (the fake's headers are text), brotli (the fake decodes gzip and
  deflate only), a body that drips past ``total_timeout_ms``, TLS, DNS and proxies;
  ``tests/loopback/test_fetcher.py`` and ``tests/loopback/test_failure_kinds.py`` keep those against
  real servers.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

from conformancekit import (
    COMPARED,
    STAND_IN,
    duplicate_groups,
    fake_crawl,
    tables,
)

from crawldeck.core.records import FetchResult

#: ``FetchResult`` fields not compared, and why.
NORMALISED = {
    "elapsed_ms": "virtual time in the fake, wall-clock time in the real fetcher",
    "request_headers": "the fake has none (the session's fields are aiohttp's); the "
    "extra headers are compared in the crawl's request logs",
    "warc": "set by core.storage.archive, not by a fetcher (None from both)",
}


def test_every_field_is_compared_or_normalised() -> None:
    """A field added to ``FetchResult`` fails here until it is compared or its
    normalisation is said."""
    names = {f.name for f in dataclasses.fields(FetchResult)}
    assert set(COMPARED) | set(NORMALISED) == names
    assert not set(COMPARED) & set(NORMALISED)


def test_the_fake_crawl_records_what_the_script_means(tmp_path: Path) -> None:
    """The crawl over the fake alone (fast tier): every case of the site shows as
    meant, so the comparison above cannot pass on a site that lost one."""
    site = fake_crawl(STAND_IN, tmp_path / "c.db")
    rows = tables(tmp_path / "c.db", STAND_IN)
    conn = sqlite3.connect(tmp_path / "c.db")
    try:
        pages = {
            url: (status, final, (error or "").split(":")[0], noindex)
            for url, final, status, error, noindex in conn.execute(
                "SELECT url, final_url, status, error, noindex FROM pages"
            )
        }
    finally:
        conn.close()
    a, b, c, dead = (STAND_IN[k] for k in ("a", "b", "c", "dead"))
    itself = {url: (status, url, error, 0) for url, status, error in [
        (a + "/", 200, ""), (a + "/final?x=1", 200, ""), (a + "/missing", 404, ""),
        (a + "/doc.pdf", 200, ""), (a + "/big", 200, "body_too_large"),
        (a + "/packed", 200, ""), (a + "/packed-big", 200, "body_too_large"),
        (a + "/sniffed", 200, ""), (a + "/chunked", 200, ""),
        (a + "/close-delimited", 200, ""), (a + "/short", None, "protocol"),
        (a + "/short-cut", 200, "body_too_large"),
        (a + "/stacked", None, "protocol"), (a + "/garbled", None, "protocol"),
        (a + "/huge-header", None, "protocol"), (a + "/dropped", None, "connection_lost"),
        (b + "/", 200, ""), (c + "/busy", 429, "gave up after 1 try"),
        (dead + "/", None, "connect"),
    ]}  # fmt: skip
    assert pages == itself | {
        a + "/about": (200, a + "/about", "", 1),  # X-Robots-Tag: noindex
        a + "/docs/old": (301, a + "/docs/moved/one", "", 0),  # Location: moved/one
        a + "/docs/moved/one": (302, a + "/final?x=1", "", 0),  # Location: ../../final?x=1
        b + "/hop": (307, a + "/about", "", 0),
    }
    assert [(row[0], row[2]) for row in rows["blocked"]] == [("<a>/private/secret", "robots")]
    assert site.count(a + "/private/secret") == 0
    assert site.count(a + "/unavailable") == site.count(a + "/hang") == 0
    # the cookie set by the chain's second hop goes with its last hop only
    cookies = {r.url: r.headers["Cookie"] for r in site.requests if "Cookie" in r.headers}
    assert cookies == {a + "/final?x=1": "seen=1"}
    links = {(source, target) for source, target, _anchor in rows["links"]}
    assert ("<a>/sniffed", "<a>/about") in links  # the sniffed page was parsed
    # the five small pages that link to /about alone are one host's near duplicates
    like = ["<a>/chunked", "<a>/close-delimited", "<a>/final?x=1", "<a>/packed", "<a>/sniffed"]
    assert duplicate_groups(tmp_path / "c.db", STAND_IN) == {
        "duplicate_of": [],
        "near_duplicate_of": [like],
    }
    assert ("<a>/packed-big", "<a>/about") in links  # a cut page's links are kept
    assert not any(source == "<a>/doc.pdf" for source, _ in links)  # not HTML, not read
