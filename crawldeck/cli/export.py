"""``crawldeck export DB``: one table of a crawl file as JSON Lines, JSON or CSV, or with
``--mirror DIR`` its pages as files (``core.storage.export``, ``core.storage.mirror``);
its ``--help``,
arguments and ``run``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from crawldeck.cli.flags import output_format, unknown_output_name
from crawldeck.cli.output import EXIT_NOTHING_MIRRORED, EXIT_OK, EXIT_STOPPED, fail
from crawldeck.core.errors import CrawldeckError
from crawldeck.core.words import plural

#: ``export --table``'s choices: ``core.storage.export.TABLES``, spelt out so that ``--help``
#: does not import the exports (a test holds the two equal).
EXPORT_TABLES = (
    "pages", "blocked", "hosts", "links", "frontier", "runs", "page_versions", "sitemaps",
    "sitemap_urls", "page_summary", "host_summary", "broken_links",
)  # fmt: skip
EXPORT_FORMATS = ("jsonl", "json", "csv")


#: The command's line in ``crawldeck --help``, and the start of its own ``--help``.
SUMMARY = "export a table of a crawl file, or its pages as a mirror (--mirror)"
DESCRIPTION = (
    "Write one table of a crawl file as JSON Lines, JSON or CSV, streaming\n"
    "(constant memory); or, with --mirror DIR, its pages as files, as wget -m."
)
#: The end of its ``--help``: two examples, then notes.
EPILOG = """\
examples:
  crawldeck export crawl.db --table blocked --format csv -o blocked.csv
      the refused URLs and why as CSV (written to a temporary file, renamed at the end)
  crawldeck export crawl.db --mirror site --convert-links
      the fetched pages as files under site/HOST/..., as wget -m -k leaves them

--mirror names: a path segment's escapes decoded, then every byte but A-Z a-z 0-9
-._~!$&'()*+,;=:@ written %XX (an encoded slash stays %2F, a NUL %00); . and .. as
%2E and %2E%2E; the query after a ?; %_ an empty segment, %+ a long name's next piece
(a directory), %~ a file whose name a directory needs. Nothing lands outside DIR."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``crawldeck export``'s arguments."""
    parser.add_argument(
        "db", type=Path, metavar="DB", nargs="?", default=Path("crawl.db"),
        help="the crawl file (default: crawl.db, as crawl's --db)",
    )  # fmt: skip
    parser.add_argument(
        "--table", choices=EXPORT_TABLES, default="pages", metavar="TABLE",
        help=f"the table: {', '.join(EXPORT_TABLES)} (default pages)",
    )  # fmt: skip
    parser.add_argument(
        "--format", choices=EXPORT_FORMATS,
        help="the format: jsonl (one object a line), json (one array), csv (default: by "
        "-o's name, .jsonl/.jl, .json, .csv, as Scrapy's -o, another name refused; "
        "jsonl to stdout)",
    )  # fmt: skip
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE",
        help="output file; - is stdout, as wget's -O - and Scrapy's -o - (default stdout)",
    )  # fmt: skip
    parser.add_argument(
        "--with-body", action="store_true",
        help="pages as jsonl: add each page's body, read from the WARC files (default: off)",
    )  # fmt: skip
    parser.add_argument(
        "--mirror", type=Path, metavar="DIR",
        help="write the fetched bodies from the WARC files as a directory tree under DIR, "
        "as wget -m does: a folder per host, index.html for directory URLs (default: off)",
    )  # fmt: skip
    parser.add_argument(
        "-k", "--convert-links", action="store_true",
        help="with --mirror: make the links between mirrored pages relative, as wget -k "
        "(default: off)",
    )  # fmt: skip
    parser.add_argument(
        "-E", "--adjust-extension", action="store_true",
        help="with --mirror: an HTML page whose name does not end in .html or .htm gets "
        ".html after it (about -> about.html), so it opens as HTML from disk, as wget -E "
        "(default: off: names read back as their URLs)",
    )  # fmt: skip


def _stop_export(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _export_to_file(args: argparse.Namespace) -> int:
    """``export_file`` (atomic: a temporary file renamed over ``-o`` at the end), with
    SIGTERM and SIGHUP raising ``KeyboardInterrupt`` as SIGINT does, so that a stopped
    export removes its temporary file and leaves ``-o`` as it was."""
    from crawldeck.core.storage.export import export_file

    stops = (signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, _stop_export) for sig in stops}
    try:
        return export_file(args.db, args.table, args.format, args.output, with_body=args.with_body)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


#: Pages skipped as another URL's file that ``export --mirror`` names, one a line.
MIRROR_CLASHES = 5


def _run_mirror(args: argparse.Namespace) -> int:
    """``crawldeck export DB --mirror DIR [--convert-links] [-E]`` (``core.storage.mirror``): the
    files, then on stderr how many and what was skipped, by reason, and the first
    ``MIRROR_CLASHES`` pages skipped as the same file as another URL, with that URL."""
    if (args.output is not None or args.with_body or args.table != "pages"
            or args.format is not None):  # fmt: skip
        return fail(args.command, "--mirror writes a directory of bodies; --table, --format, "
                    "-o and --with-body are for a table's rows")  # fmt: skip
    from crawldeck.core.storage.mirror import (
        IN_THE_WAY,
        NO_WARC_RECORD,
        WARC_FILE_MISSING,
        write_mirror,
    )

    target = Path(args.mirror)
    held = target.is_dir() and any(target.iterdir())  # an earlier export's files
    try:
        done = write_mirror(
            args.db, args.mirror,
            convert_links=args.convert_links, adjust_extension=args.adjust_extension,
        )  # fmt: skip
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    except OSError as exc:
        if Path(args.mirror).exists() and not Path(args.mirror).is_dir():
            return fail(args.command, f"--mirror {str(args.mirror)!r} is a file, not a directory")
        return fail(args.command, f"cannot write {str(args.mirror)!r}: {exc.strerror}")
    line = (f"crawldeck: mirrored {plural(done.files, 'file')} of {plural(done.hosts, 'host')} "
            f"into {args.mirror}")  # fmt: skip
    if args.convert_links:
        line += (
            f"; {plural(done.links_converted, 'link')} made relative, "
            f"{done.links_absolute} to pages not mirrored made absolute"
        )
    if done.cut:  # partial files, as the crawl cut their bodies
        line += f"; {plural(done.cut, 'file')} cut at the crawl's max_body_bytes"
    if done.skipped:
        line += "; skipped: " + ", ".join(f"{why} {n}" for why, n in sorted(done.skipped.items()))
    # which URL took which one's file, as a wget user reads a clash (issue #25)
    clashes = [f"  {url}: same file as {kept}" for url, kept in done.same_file[:MIRROR_CLASHES]]
    if len(done.same_file) > MIRROR_CLASHES:
        clashes.append(f"  and {len(done.same_file) - MIRROR_CLASHES} more")
    if held:  # as wget -m leaves them; say so (issue #25 trial 19: about and about.html)
        clashes.append(
            f"crawldeck: note: {args.mirror} was not empty: files this export did not write "
            "are left as they were (remove it first for a mirror of this crawl only)"
        )
    print("\n".join([line, *clashes]), file=sys.stderr)
    unread = done.skipped[NO_WARC_RECORD] + done.skipped[WARC_FILE_MISSING]
    if done.files == 0 and unread:
        # a mirror of nothing is a failure a script must see (issue #25 trial 8)
        where = "it was crawled with WARC off (--no-warc or warc = false)"
        if done.skipped[WARC_FILE_MISSING]:
            where = f"the WARC files it names are not beside {args.db}"
        print(f"crawldeck export: error: nothing mirrored: the bodies come from the crawl's "
              f"WARC files, and {where}", file=sys.stderr)  # fmt: skip
        return EXIT_NOTHING_MIRRORED
    if done.files == 0 and done.skipped[IN_THE_WAY]:  # issue #25 trial 18: exit 0
        print(f"crawldeck export: error: nothing mirrored: {args.mirror} holds symbolic "
              "links or files where the mirror's folders or files go, and the mirror "
              "follows or overwrites none: mirror into a new directory",
              file=sys.stderr)  # fmt: skip
        return EXIT_NOTHING_MIRRORED
    return EXIT_OK


#: Each export format in words, for the note on a name that says another.
FORMAT_NAMES: dict[str, str] = {"jsonl": "JSON lines", "json": "one JSON array", "csv": "CSV"}


def run(args: argparse.Namespace) -> int:
    """``crawldeck export DB``: a table to stdout or ``-o FILE`` in ``--format``, else
    the format ``-o``'s name says (``cli.flags.OUTPUT_FORMATS``), else (stdout) JSON
    lines; a name that says no format without ``--format`` is refused (one line, exit
    ``EXIT_BAD_INPUT``), as ``crawl -o`` refuses it; a note when the name says another
    format than ``--format``; ``--mirror`` (``_run_mirror``)."""
    if args.output == Path("-"):  # stdout, as wget's -O - and curl's -o - (issue #25)
        args.output = None
    if args.mirror is not None:
        return _run_mirror(args)
    if args.convert_links or args.adjust_extension:
        flag = "--convert-links" if args.convert_links else "--adjust-extension"
        return fail(args.command, f"{flag} goes with --mirror DIR")
    by_name = None if args.output is None else output_format(args.output)
    if args.format is None:
        if args.output is not None and by_name is None:
            # a name such as pages.xml: refused, not written as JSON lines (issue #25)
            return fail(args.command, f"{unknown_output_name(args.output)}, or give --format "
                        f"{', '.join(EXPORT_FORMATS[:-1])} or {EXPORT_FORMATS[-1]}")  # fmt: skip
        args.format = by_name or "jsonl"
    elif by_name is not None and by_name != args.format:
        # what the name promises is not what is written: say so (issue #25)
        print(f"crawldeck: note: {str(args.output)!r} holds {FORMAT_NAMES[args.format]} "
              f"(--format {args.format}), not what its name says", file=sys.stderr)  # fmt: skip
    from crawldeck.core.storage.export import export

    try:
        if args.output is None:
            count = export(args.db, args.table, args.format, sys.stdout, with_body=args.with_body)
        else:
            count = _export_to_file(args)
    except CrawldeckError as exc:
        return fail(args.command, str(exc))
    except KeyboardInterrupt:
        kept = "" if args.output is None else f"; {str(args.output)!r} left as it was"
        print(f"crawldeck: export stopped{kept}", file=sys.stderr)
        return EXIT_STOPPED
    except BrokenPipeError:
        # The reader went away (``| head``): not an error. Silence the final flush too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:
        return fail(args.command, f"cannot write {str(args.output)!r}: {exc.strerror}")
    rows = "row" if count == 1 else "rows"
    print(f"crawldeck: exported {count} {rows} of {args.table}", file=sys.stderr)
    return EXIT_OK
