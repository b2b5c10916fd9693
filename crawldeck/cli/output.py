"""The exit codes of the ``crawldeck`` command and what its commands print alike: the
one-line error (``fail``), how to call the command again (``program``), one link as
``crawldeck links`` prints it and the broken links an end-of-crawl summary lists.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

from crawldeck.core.errors import CrawldeckError
from crawldeck.core.records import LinkCheck
from crawldeck.core.storage.store import Store
from crawldeck.core.words import plural

EXIT_OK = 0
#: ``crawldeck links --broken`` found broken links (as linkchecker exits 1 on them).
EXIT_BROKEN_LINKS = 1
EXIT_BAD_INPUT = 2
#: ``crawldeck export --mirror`` wrote no file: no page's WARC record could be read.
EXIT_NOTHING_MIRRORED = 1
#: The crawl ended and got no page at all: every seed failed (its summary says why).
EXIT_SEEDS_FAILED = 3
#: ``crawldeck attach``: the crawl went away while attached (killed: no run's end).
EXIT_ATTACH_LOST = 1
EXIT_STOPPED = 130


def program() -> str:
    """How to call this command again: ``crawldeck`` when that is on PATH, else the
    path it was started by (e.g. ``.venv/bin/crawldeck`` after the README's install)."""
    argv0 = sys.argv[0]
    on_path = shutil.which("crawldeck")
    if on_path and Path(on_path).resolve() == Path(argv0).resolve():
        return "crawldeck"
    path = Path(argv0).resolve()
    if path.is_relative_to(Path.cwd()):
        return shlex.quote(str(path.relative_to(Path.cwd())))
    return shlex.quote(str(path))


def fail(command: str, message: str) -> int:
    """Print the one-line error ``crawldeck COMMAND: error: MESSAGE`` on stderr (the
    form of argparse's flag errors, ``Parser.error``: every error names its command);
    returns ``EXIT_BAD_INPUT``."""
    print(f"crawldeck {command}: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def link_line(link: LinkCheck) -> str:
    """One link as ``crawldeck links`` prints it: ``WHY  LINK  from PAGE`` (``a seed``
    for a seed no page links to), then ``  "ANCHOR TEXT"`` when the link has one
    (JSON's quoting)."""
    origin = "a seed" if link.from_url is None else f"from {link.from_url}"
    line = f"{link.why()}  {link.to_url}  {origin}"
    if link.anchor:
        line += "  " + json.dumps(link.anchor, ensure_ascii=False)
    return line


#: Groups of broken links the end-of-crawl summary lists (``broken_lines``), and the
#: links it shows of each.
SUMMARY_BROKEN_GROUPS = 5
SUMMARY_BROKEN_PER_GROUP = 3


def _links_to(links: int, urls: int) -> str:
    """``3`` (as many links as URLs), or ``10 links to 2 URLs``, as ``links`` says it
    (issue #25 trial 13: a count of links beside lines that repeat one URL)."""
    return str(links) if links == urls else f"{links} links to {plural(urls, 'URL')}"


def broken_lines(store: Store, db: Path) -> list[str]:
    """The end-of-crawl summary's broken links (``Store.broken_groups``, after a
    ``flush``): their count (``10 links to 2 URLs`` when a URL has several) and the
    command that lists them all, then grouped by what the target got (``HTTP 404: 3``,
    ``connect: 1``), the largest group first, at most
    ``SUMMARY_BROKEN_GROUPS`` groups, each with its first ``SUMMARY_BROKEN_PER_GROUP``
    links as ``crawldeck links`` prints them; nothing when there are none, or when the
    file cannot be read (the summary goes on without them). The headless summary, the
    console's (printed when it closes) and a cluster crawl's."""
    try:
        store.flush()
        groups = store.broken_groups(SUMMARY_BROKEN_PER_GROUP)
    except CrawldeckError:
        return []
    if not groups:
        return []
    count = sum(group.count for group in groups)
    targets = sum(group.urls for group in groups)  # a URL is in one group: what it got
    listing = f"{program()} links {shlex.quote(str(db))} --broken"
    lines = [f"broken links: {_links_to(count, targets)} (all of them: {listing})"]
    for group in groups[:SUMMARY_BROKEN_GROUPS]:
        more = f", the first {len(group.first)}" if group.count > len(group.first) else ""
        lines.append(f"  {group.label()}: {_links_to(group.count, group.urls)}{more}")
        lines += [f"    {link_line(link)}" for link in group.first]
    rest = groups[SUMMARY_BROKEN_GROUPS:]
    if rest:
        # "HTTP 503: gave up after 6 tries 1" read as one more figure (issue #25 trial 8)
        others = "; ".join(f"{group.label()} ({group.count})" for group in rest)
        lines.append(f"  and {sum(group.count for group in rest)} more: {others}")
    return lines
