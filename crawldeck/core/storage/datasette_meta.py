"""The Datasette metadata of a crawl file: ``<crawl file>.metadata.json`` beside it.

Datasette (datasette.io) shows a SQLite file as web pages; its metadata file gives the
database, its tables and views titles and descriptions, each column a description, and
the columns that hold a quantity their unit (Datasette's ``units``, Pint names: a
``bytes`` column shows as ``879 B``). Open a crawl with::

    datasette crawl.db -m crawl.db.metadata.json

The file is written by ``core.storage.store.Store`` when a run ends (``Store.end_run``: a crawl,
a resumed crawl, a cluster crawl's coordinator), so every crawl file that finished or
was stopped has one; a killed run's file gets it at the end of the next run. It is the
same for every crawl file but for the database's name, which is the file's stem
(Datasette names ``crawl.db`` ``crawl``); a renamed crawl file needs the next run's.
Descriptions follow the schema of ``core.storage.store`` (docstring; version ``SCHEMA_VERSION``)
and docs/architecture.md ("export contract").
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any, Final

#: What the file name of a crawl file gets for its metadata file.
METADATA_SUFFIX: Final = ".metadata.json"

_AT: Final = "UTC, ISO 8601 text (YYYY-MM-DDTHH:MM:SS.ffffffZ)"
_EPOCH: Final = "wall-clock seconds since the epoch (REAL)"
_RUN: Final = "the run that wrote the row (runs.id; NULL: before every run of the file)"

#: table -> (title, description, {column: description}, {column: Pint unit}).
_TABLES: Final[dict[str, tuple[str, str, dict[str, str], dict[str, str]]]] = {
    "pages": (
        "Pages",
        "One row per URL fetched: its latest response (a URL fetched again replaces its "
        "row; every fetch is in page_versions).",
        {
            "url": "the URL requested (primary key)",
            "final_url": "a redirect's next hop (its Location resolved: that hop has a row "
            "of its own, and a chain's end is its last hop's row), else the URL",
            "host": "its host key (host[:port])",
            "depth": "link hops from a seed (seed = 0)",
            "status": "HTTP status; NULL when no response came (see error)",
            "content_type": "the Content-Type header",
            "bytes": "body bytes read",
            "elapsed_ms": "fetch time",
            "fetched_at": f"fetch start, {_AT}",
            "rendered": "1 when the page went through a browser",
            "error": "why it failed, as 'reason: detail'",
            "noindex": "1 when meta robots or X-Robots-Tag said noindex",
            "warc_file": "the WARC file of its response record, beside the crawl file",
            "warc_offset": "the record's gzip member offset in the WARC file",
            "warc_length": "the record's gzip member length",
            "payload_digest": (
                "sha1:BASE32 of the payload as transferred (NULL: the body was not read, not HTML)"
            ),
            "title": "the HTML <title>",
            "etag": "the ETag header as sent",
            "last_modified": "the Last-Modified header as sent (HTTP-date text)",
            "content_length": "the Content-Length header as a number",
            "canonical_url": 'the <link rel="canonical"> URL',
            "duplicate_of": "the first page with the same payload (an exact duplicate)",
            "simhash": "64-bit SimHash of the page text (signed)",
            "near_duplicate_of": "an earlier page of the host within Hamming distance 3",
            "run_id": _RUN,
        },
        {
            "bytes": "byte",
            "elapsed_ms": "millisecond",
            "warc_length": "byte",
            "warc_offset": "byte",
            "content_length": "byte",
        },
    ),
    "blocked": (
        "Blocked URLs",
        "URLs the crawl refused (robots.txt, scope, traps, include/exclude), each once, "
        "with the first reason.",
        {
            "url": "the URL refused (primary key)",
            "host": "its host key",
            "reason": "a token: robots, scope, depth, excluded, ...",
            "detail": "one line for people",
            "blocked_at": f"when, {_AT}",
            "run_id": _RUN,
        },
        {},
    ),
    "hosts": (
        "Hosts",
        "The politeness state of each host; every host of pages has a row.",
        {
            "host": "the host key (primary key)",
            "ip": "its address, if resolved",
            "robots_status": "robots.txt: ok, missing, unreachable, ...",
            "robots_expires_epoch_s": f"when the robots.txt copy expires, {_EPOCH}",
            "crawl_delay_ms": "robots.txt Crawl-delay",
            "delay_ms": "the delay between two requests to the host",
            "backoff_attempts": "consecutive 429/503/timeouts",
            "backoff_until_epoch_s": f"no request before, {_EPOCH}",
            "pages_fetched": "pages fetched from the host",
            "state": "active, backoff, demoted, dead, done, ...",
            "backoff_started_epoch_s": f"start of the current backoff, {_EPOCH}",
            "learnt_delay_ms": "the delay learnt from 429/503 answers",
        },
        {
            "crawl_delay_ms": "millisecond",
            "delay_ms": "millisecond",
            "learnt_delay_ms": "millisecond",
        },
    ),
    "links": (
        "Links",
        "Each page's outlinks, once each. to_url names a pages row only once that URL "
        "was fetched: foreign keys are declared, not enforced.",
        {
            "from_url": "the page (pages.url)",
            "to_url": "the URL it links to",
            "anchor": "the link's text (an image link's alt), at most 200 characters; "
            "NULL without one",
        },
        {},
    ),
    "frontier": (
        "Frontier",
        "Every URL admitted to the crawl and its state.",
        {
            "key": "the dedupe key (primary key)",
            "url": "the URL to request",
            "host": "its host key",
            "depth": "link hops from a seed",
            "priority": "front queue (0 = highest)",
            "state": "queued, spilled, in_flight, done, failed, blocked",
            "available_epoch_s": f"not fetched before, {_EPOCH}",
            "attempts": "tries so far",
            "redirects": "JSON list of the URLs of the redirect chain that led here",
            "via": "the page it was found on",
            "seq": "insertion order",
            "score": "OPIC cash (core.policy.prioritizer; 0 under other orderings)",
        },
        {},
    ),
    "page_versions": (
        "Page versions",
        "One row per fetch of a page, every run's (a 304 is a row of its own).",
        {
            "fetched_at": f"fetch start, {_AT}",
            "payload_digest": "sha1:BASE32 of the payload",
            "run_id": _RUN,
        },
        {},
    ),
    "runs": (
        "Runs",
        "One row per run of the crawl (a resume is a new run).",
        {
            "started_at": _AT,
            "finished_at": f"{_AT}; NULL while running or when killed",
            "status": "running, finished, stopped, max_pages, killed, ...",
            "config": "the run's configuration (JSON)",
            "stats": "the run's figures (JSON)",
        },
        {},
    ),
    "sitemaps": (
        "Sitemaps",
        "Each sitemap file read.",
        {"fetched_at": _AT, "urls": "entries listed and kept", "error": "reason: detail"},
        {},
    ),
    "sitemap_urls": (
        "Sitemap URLs",
        "What each sitemap says of each URL it lists.",
        {"lastmod_at": f"<lastmod>, {_AT}", "priority": "<priority>, 0.0 to 1.0"},
        {},
    ),
    "page_summary": (
        "Page summary",
        "A page with its inlinks and outlinks (a view).",
        {"inlinks": "links to the page", "outlinks": "links from the page"},
        {"bytes": "byte", "elapsed_ms": "millisecond"},
    ),
    "host_summary": (
        "Host summary",
        "A host's pages by status class, bytes, blocked URLs, robots.txt and delay (a view).",
        {
            "pages": "pages fetched",
            "errors": "pages without a response",
            "blocked": "URLs of the host refused",
            "bytes": "body bytes of its pages",
        },
        {
            "bytes": "byte",
            "crawl_delay_ms": "millisecond",
            "delay_ms": "millisecond",
            "learnt_delay_ms": "millisecond",
        },
    ),
    "broken_links": (
        "Broken links",
        "Each link whose target got HTTP 4xx/5xx, no response (refused, timeout, a name "
        "that does not resolve) or a failed redirect chain, or redirected to such an end, "
        "with the page it is on (a view; a URL robots.txt or the scope refused is not "
        "broken: see blocked).",
        {
            "from_url": "the page the link is on",
            "to_url": "the link, resolved against that page",
            "status": "the target's HTTP status; NULL without a response",
            "error": "why the target failed, as 'reason: detail'",
            "final_url": "the URL that answered so: the link, or the end of its redirects",
            "anchor": "the link's text (an image link's alt); NULL without one",
        },
        {},
    ),
}


def metadata(db_name: str) -> dict[str, Any]:
    """The Datasette metadata (a JSON object) of the crawl database ``db_name`` (the
    name Datasette gives the file: its stem, ``crawl`` for ``crawl.db``)."""
    tables: dict[str, Any] = {}
    for table, (title, description, columns, units) in _TABLES.items():
        entry: dict[str, Any] = {"title": title, "description": description}
        if columns:
            entry["columns"] = columns
        if units:
            entry["units"] = units
        tables[table] = entry
    tables["pages"]["label_column"] = "title"
    tables["pages"]["facets"] = ["status", "host", "content_type"]
    tables["blocked"]["facets"] = ["reason", "host"]
    return {
        "title": "crawldeck crawl",
        "description": (
            "A crawl file of crawldeck. Times named *_at are UTC ISO 8601 text, "
            "*_epoch_s are seconds since the epoch; sizes in bytes, durations in ms."
        ),
        "databases": {db_name: {"tables": tables}},
    }


def metadata_path(db: Path) -> Path:
    """``<db>.metadata.json``: the metadata file of the crawl file ``db``."""
    return db.with_name(db.name + METADATA_SUFFIX)


def write_metadata(db: Path) -> Path:
    """Write ``metadata_path(db)`` atomically (a hidden temporary file renamed over it),
    for Datasette's name of ``db`` (its stem).

    Returns:
        the path written.

    Raises:
        OSError: the file cannot be written (the temporary file is removed).
    """
    target = metadata_path(db)
    temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    text = json.dumps(metadata(db.stem), indent=2, ensure_ascii=False) + "\n"
    try:
        temp.write_text(text, encoding="utf-8")
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return target


__all__ = ["METADATA_SUFFIX", "metadata", "metadata_path", "write_metadata"]
