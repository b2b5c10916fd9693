"""``crawldeck show DB URL``: the WARC record of one fetched page, its headers and body
(``--raw``: the body's bytes alone); its ``--help``, arguments and ``run``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from crawldeck.cli.output import EXIT_OK, fail
from crawldeck.core.errors import CrawldeckError
from crawldeck.core.words import plural

if TYPE_CHECKING:  # the export module loads on use (``--help`` stays light)
    from crawldeck.core.storage.export import ArchivedRecord

#: The command's line in ``crawldeck --help``, and the start of its own ``--help``.
SUMMARY = "print a page's WARC record: headers and body"
DESCRIPTION = "Print the WARC record of one fetched page: its WARC headers, HTTP head\nand body."
#: The end of its ``--help``: two examples, then notes.
EPILOG = """\
examples:
  crawldeck show crawl.db https://docs.example.org/
      the page's WARC record: its headers, HTTP head and body as text
  crawldeck show crawl.db https://docs.example.org/ --raw > page.html
      the body's bytes alone, as they were received (the crawl downloads the bodies
      of HTML pages only: an image's was not read)"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``crawldeck show``'s arguments."""
    parser.add_argument("db", type=Path, metavar="DB", help="the crawl file")
    parser.add_argument("url", metavar="URL", help="the page's URL, as fetched")
    parser.add_argument(
        "--raw", action="store_true",
        help="write only the body's bytes, as stored, no headers (default: off)",
    )  # fmt: skip


def _not_read(record: ArchivedRecord) -> bool:
    """Whether ``record``'s body was not downloaded (``WARC-Truncated: unspecified``
    with no bytes: not HTML, ``core.net.fetcher``)."""
    truncated = dict(record.warc_headers).get("WARC-Truncated")
    return truncated == "unspecified" and not record.body


def run(args: argparse.Namespace) -> int:
    """``crawldeck show DB URL``: the page's WARC header, a line when recrawls found
    the page not modified since (304s), its HTTP head and body (decoded text; a binary
    body as one line with its size), or with ``--raw`` the body's bytes alone."""
    from crawldeck.core.storage.export import body_text, page_record, page_revalidations

    try:
        record = page_record(args.db, args.url)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    if args.raw:  # the body alone, as stored (like curl -o): for a file or a pipe
        if record.rec_type == "revisit":  # the same payload as a page fetched earlier
            target = dict(record.warc_headers).get("WARC-Refers-To-Target-URI")
            if target is None:
                return fail(args.command, f"{args.url} is a revisit record without its target")
            try:
                record = page_record(args.db, target)
            except CrawldeckError as exc:
                return fail(args.command, f"{args.url} repeats {target}: {exc}")
        if _not_read(record):  # no empty file as its body (issue #25 trial 11)
            kind = record.content_type.split(";", 1)[0] or "no Content-Type"
            return fail(args.command, f"{args.url}: its body was not downloaded ({kind}: "
                        "not HTML; the crawl reads the bodies of HTML pages only)")  # fmt: skip
        sys.stdout.buffer.write(record.body)
        return EXIT_OK
    lines = [f"{name}: {value}" for name, value in record.warc_headers]
    print("\n".join(lines) + "\n")
    headers = dict(record.warc_headers)
    try:
        checks, last = page_revalidations(args.db, headers.get("WARC-Target-URI", args.url))
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    if checks:  # a recrawl's 304 keeps this record: say the page was checked since
        print(f"(checked since: 304 Not Modified {plural(checks, 'time')}, the last at "
              f"{last}; the record is the fetch of {headers.get('WARC-Date', '?')})\n")  # fmt: skip
    if record.http_head:
        print(record.http_head.replace("\r\n", "\n") + "\n")
    text = body_text(record)
    if _not_read(record):
        print("(body not downloaded: not HTML)")
    elif record.rec_type == "revisit":
        target = dict(record.warc_headers).get("WARC-Refers-To-Target-URI", "?")
        print(f"(revisit: the same payload as {target}; no body stored here)")
    elif text is None:
        kind = record.content_type or "no Content-Type"
        print(f"(binary body, {plural(len(record.body), 'byte')}, {kind}; --raw writes it)")
    else:
        print(text)
    return EXIT_OK
