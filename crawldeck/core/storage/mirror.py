"""A crawl's fetched bodies as a directory tree, as ``wget -m`` leaves one
(``crawldeck export DB --mirror DIR``, issue #25 item 5), with links between the
mirrored pages made relative as ``wget -k`` (``--convert-links``) makes them.

What is written: each page of the crawl file with a 2xx answer and a WARC record, its
body read from the record (content coding undone, ``core.storage.export.read_record``); a
revisit's body is that of the page it repeats (``duplicate_of``). A body that was not
downloaded (not HTML, ``WARC-Truncated``), a page whose WARC file is missing and a URL
whose file another URL already took are skipped and counted (``MirrorResult``).

The mapping of a URL to a path under DIR (``mirror_path``; ``mirror_url`` is its
inverse), wget's layout with every name made safe and reversible:

* the first directory is the URL's host key (``core.policy.urls.host_key``: the host, with
  ``:port`` when it is not the scheme's default: ``example.org``, ``127.0.0.1:8080``,
  ``[::1]:8080``), as wget names it (any other host text escaped as a segment is); ``http`` and
  ``https`` of one host share it, as in wget (the scheme is not kept);
* each path segment is one name: its percent-escapes decoded to bytes, then every byte
  outside ``A-Z a-z 0-9 - . _ ~ ! $ & ' ( ) * + , ; = : @`` written ``%XX`` (upper-case
  hex): an encoded slash (``%2F``), ``%``, ``?``, ``#``, a space, NUL and the other
  control bytes, and every non-ASCII byte stay escaped, so a name never holds a ``/``
  or a NUL and never depends on a file system's Unicode rules; a segment that decodes
  to ``.`` or ``..`` is written ``%2E`` / ``%2E%2E``, so no name walks up;
* a URL whose path ends in ``/`` (a directory URL) gets ``index.html``, as in wget;
  the query, when there is one, follows the last name after a ``?``, escaped as a
  segment is (``index.html?q=1``, wget's ``-m`` names); ``index.html`` is therefore
  both ``/d/`` and ``/d/index.html``: the first page of the two (rowid order) is
  written, the other is skipped as a clash;
* with ``--adjust-extension`` (wget's ``-E``), an HTML page whose last name does not
  end in ``.html``/``.htm`` gets ``.html`` after it (``about.html``,
  ``page.php?id=1.html``), so that it opens as HTML from disk; such names no longer read
  back as their URL (``mirror_url``), as in wget;
* ``%`` followed by anything but two hex digits is a marker the escaping never makes:
  ``%_`` is an empty segment (``/a//b``); a name longer than ``NAME_MAX_CHARS`` (file
  systems allow 255 bytes) is cut into pieces of at most that many characters (never
  inside a ``%XX``), each piece after the first a directory below the one before,
  starting with ``%+``; and a file whose name a directory of another URL needs
  (``/a`` and ``/a/b``) gets ``%~`` at its end.

Never a path outside DIR, whatever the URL or the crawl file says: every name is made
as above (no ``/``, NUL, ``.``, ``..`` or empty name), and the files are created
through directory descriptors (``openat``) with ``O_NOFOLLOW``, so a symbolic link
planted in DIR is refused (counted as ``IN_THE_WAY``), never followed.

``--convert-links`` (wget's ``-k``): in each mirrored HTML page, the ``href`` and
``src`` attributes whose URL (resolved as the crawl resolved it,
``core.policy.urls.clean``, against the page or its ``<base href>``) is a mirrored page,
a redirect to one, a URL skipped as the same file as one (``/d/index.html`` when ``/d/``
took the file), or a URL with a mirrored page's dedupe key (``/b?sessionid=2`` for the
``/b`` fetched: ``urls.normalize`` with the crawl's ``strip_params``) become the
relative path to its file, percent-encoded (``%`` as ``%25``, ``?`` as ``%3F``), its
``#fragment`` kept; a ``<base>`` element is removed (it would point the relative links
back at the site). A link to a page not mirrored, written relative (``about.html``,
``/img/logo.png``, ``//cdn.example/x``), becomes its absolute URL
(``http://host/about.html``), as wget's ``-k`` does, so that it still leads somewhere
from a file on disk; an absolute link to a page not mirrored is left as written.
Only the links change, as with wget's ``-k``: each start tag is found by the standard
library's ``html.parser`` (its source position), and the value of its ``href`` or
``src`` attribute is replaced in the page's text, the rest of the page left as it
was, in the page's own charset (issue #25 trial 19: serializing the parsed page again
rewrote its doctype, added a ``<head>`` and changed lines with no link); bytes that
charset cannot decode come out as they were (``_decode``). Links in CSS files are not
converted.

Memory: the path of every mirrored page is held while the mirror is written (for the
clashes and the link conversion): a few hundred bytes a page.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import html
import os
import posixpath
import re
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Final
from urllib.parse import quote, unquote, unquote_to_bytes, urlsplit

from crawldeck.core.errors import CrawldeckError, StoreError, UrlError
from crawldeck.core.policy import urls
from crawldeck.core.policy.links import query_encoded
from crawldeck.core.storage.export import (
    ArchivedRecord,
    body_charset,
    open_crawl,
    read_record,
    strip_params_of,
)

#: The bytes a name keeps as they are (RFC 3986 unreserved and sub-delims, ``:``, ``@``).
_SAFE: Final = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@"
)
#: A host key kept as it is for its directory (``core.policy.urls.host_key``'s form: a DNS
#: name, an IPv4 address or a bracketed IPv6 one, ``:port``); any other is escaped.
_HOST: Final = re.compile(r"[a-z0-9._\-]+(?::\d+)?|\[[0-9a-f:.]+\](?::\d+)?")
#: The longest name written, in characters (ASCII: bytes); a longer one is cut into
#: directories. 255 bytes is the limit of ext4, XFS, btrfs, APFS and NTFS; the room
#: left is for the ``%~`` and ``%+`` markers.
NAME_MAX_CHARS: Final = 240
#: The name of a directory URL's file, as wget's.
INDEX: Final = "index.html"
EMPTY_SEGMENT: Final = "%_"
CONTINUED: Final = "%+"
SHADOWED: Final = "%~"
#: A URL with a scheme (RFC 3986 §3.1), which ``--convert-links`` leaves as written
#: when its page is not mirrored.
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
#: Media types whose links ``--convert-links`` rewrites.
_HTML_TYPES: Final = ("text/html", "application/xhtml+xml")
_PAGES: Final = (
    "SELECT url, warc_file, warc_offset, bytes, duplicate_of, content_type FROM pages"
    " WHERE status BETWEEN 200 AND 299 ORDER BY rowid"
)
_REDIRECTS: Final = (
    "SELECT url, final_url FROM pages WHERE status BETWEEN 300 AND 399"
    " AND final_url IS NOT NULL AND final_url != url"
)
_RECORD: Final = "SELECT warc_file, warc_offset, bytes FROM pages WHERE url = ?"
#: Redirect hops followed from a link to the file it leads to (more than a chain the
#: crawl follows by default, ``max_redirects``; a loop ends here too).
_CHAIN_HOPS: Final = 30
_NOT_2XX: Final = (
    "SELECT count(*) FROM pages WHERE status IS NULL OR status NOT BETWEEN 200 AND 299"
)


def _escape(raw: bytes) -> str:
    return "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in raw)


def _name(segment: str) -> str:
    """One URL path segment (as in the URL, escapes and all) as one safe name."""
    name = _escape(unquote_to_bytes(segment))
    if name in (".", ".."):
        return name.replace(".", "%2E")
    return name or EMPTY_SEGMENT


def _cut(name: str) -> list[str]:
    """``name`` in pieces of at most ``NAME_MAX_CHARS`` characters, never inside a
    ``%XX`` or a marker; each piece after the first starts with ``CONTINUED``."""
    pieces: list[str] = []
    while len(name) > NAME_MAX_CHARS:
        cut = NAME_MAX_CHARS
        while "%" in name[cut - 2 : cut]:
            cut -= 1
        pieces.append(name[:cut])
        name = CONTINUED + name[cut:]
    return [*pieces, name]


def mirror_path(url: str) -> tuple[str, ...]:
    """The path of ``url``'s file under the mirror's directory, as names (module
    docstring): ``("example.org", "docs", "index.html")`` for
    ``https://example.org/docs/``.

    Args:
        url: an absolute http(s) URL as the crawl stores it (``core.policy.urls.clean``).

    Raises:
        UrlError: ``url`` is not an absolute http(s) URL with a host.
    """
    try:
        parts = urlsplit(url)
    except ValueError:  # a bracketed host that is not an IPv6 address
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise UrlError(f"not an absolute http(s) URL: {url[:200]!r}")
    host = urls.host_key(url)
    if not _HOST.fullmatch(host) or host in (".", ".."):
        host = _name(host)
    segments = parts.path.split("/")[1:] or [""]
    leaf = segments[-1]
    names = [_name(s) for s in segments[:-1]]
    last = INDEX if leaf == "" else _name(leaf)
    if "?" in url.split("#", 1)[0]:
        last += "?" + _escape(unquote_to_bytes(parts.query))
    return (*_cut(host), *(p for n in names for p in _cut(n)), *_cut(last))


def mirror_url(path: tuple[str, ...]) -> str:
    """The URL (scheme-relative: ``//host/path?query``; the scheme is not kept) whose
    file is ``path`` (``mirror_path``'s inverse: each segment decodes to the same
    bytes as the URL's; ``index.html`` reads as the directory URL).

    Raises:
        ValueError: ``path`` is not one ``mirror_path`` makes.
    """
    names: list[str] = []
    for i, name in enumerate(path):
        if i == len(path) - 1 and name.endswith(SHADOWED):
            name = name[: -len(SHADOWED)]
        if name.startswith(CONTINUED):
            if not names:
                raise ValueError(f"a continued name with nothing before it: {name!r}")
            names[-1] += name[len(CONTINUED) :]
        else:
            names.append(name)
    if len(names) < 2:
        raise ValueError(f"not a mirror path: {'/'.join(path)!r}")
    leaf, query = names[-1], None
    if "?" in leaf:
        leaf, query = leaf.split("?", 1)
    segments = [_segment(n) for n in names[1:-1]]
    segments.append("" if leaf == INDEX else _segment(leaf))
    url = f"//{unquote(names[0])}/" + "/".join(segments)
    return url if query is None else f"{url}?{_segment(query)}"


def _segment(name: str) -> str:
    """A name back as the URL text it stands for (its ``%XX`` kept: they are escapes)."""
    return "" if name == EMPTY_SEGMENT else name


@dataclass
class MirrorResult:
    """What ``write_mirror`` did.

    Attributes:
        files: files written.
        hosts: host directories written.
        links_converted: ``href``/``src`` attributes made relative (``convert_links``).
        links_absolute: relative ``href``/``src`` of pages not mirrored written as
            absolute URLs (``convert_links``).
        cut: files written whose body the crawl cut at ``max_body_bytes`` (its WARC
            record says ``WARC-Truncated: length``): partial files (issue #25 trial 16:
            a 30 MB page was mirrored as its first 10 MiB without a word).
        same_file: each page skipped as ``same file as another URL``: (its URL, the
            URL whose file it would have been), in crawl order (issue #25).
        skipped: pages not written, by reason: ``not downloaded`` (a body the crawl
            did not fetch: not HTML), ``same file as another URL`` (another URL took
            its path: ``/d/`` and ``/d/index.html``; ``same_file`` names them), ``no
            WARC record`` (crawled with WARC off, or its record unreadable),
            ``WARC file missing`` (its file is not beside the crawl file), ``no body in
            its WARC record`` (a revisit whose original is gone), ``IN_THE_WAY`` (a
            symbolic link or a file in the way under DIR), ``not an http(s) URL``,
            ``no 2xx answer`` (a 404, a redirect, no response: every page is counted).
    """

    files: int = 0
    hosts: int = 0
    links_converted: int = 0
    links_absolute: int = 0
    cut: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    same_file: list[tuple[str, str]] = field(default_factory=list)


#: The reasons a page is skipped for want of its body's WARC record (``MirrorResult``):
#: none was written (``warc = false``, a cluster worker's file) or it is unreadable, and
#: its WARC file is not where the crawl file says.
NO_WARC_RECORD = "no WARC record"
WARC_FILE_MISSING = "WARC file missing"
#: A page whose path under DIR has something not the mirror's in the way: a symbolic
#: link (never followed) or a file where a folder goes (``MirrorResult``).
IN_THE_WAY = "a symlink or file in the way (not followed)"

#: The pages that got no 2xx answer (a 404, a redirect, no response): no body to write,
#: as ``wget -m`` saves none (``MirrorResult``).
NO_2XX = "no 2xx answer"

#: The reason a page is skipped when another URL maps to its file (``MirrorResult``).
SAME_FILE = "same file as another URL"


@dataclass(frozen=True, slots=True)
class _Page:
    url: str
    path: tuple[str, ...]
    warc_file: str
    warc_offset: int
    size: int
    duplicate_of: str | None
    content_type: str | None


#: A name wget's ``-E`` leaves as it is: it ends in ``.html`` or ``.htm``, any case.
_HTML_NAME: Final = re.compile(r"\.html?\Z", re.IGNORECASE)


def _adjusted(path: tuple[str, ...], content_type: str | None) -> tuple[str, ...]:
    """``path`` with ``.html`` after its last name when the page is HTML and the name
    does not end in ``.html``/``.htm`` (``about``, ``page.php?id=1``), as wget's ``-E``
    (``--adjust-extension``) names the file, so that it opens as HTML from disk (a name
    is at most ``NAME_MAX_CHARS``, 240, ASCII characters: 245 with it, under the 255
    bytes file systems allow)."""
    last = path[-1]
    if not _is_html(content_type) or _HTML_NAME.search(last):
        return path
    return (*path[:-1], last + ".html")


def _plan(
    conn: sqlite3.Connection, where: Path, result: MirrorResult, *, adjust: bool = False
) -> list[_Page]:
    """The pages to write and their paths: clashes skipped (first wins), a page whose
    WARC file is not in ``where`` skipped, a file whose name a directory needs marked
    ``SHADOWED``; with ``adjust``, an HTML page's name ends in ``.html`` (``_adjusted``)."""
    pages: list[_Page] = []
    taken: dict[tuple[str, ...], str] = {}
    present: dict[str, bool] = {}
    for url, file, offset, size, dup, ctype in conn.execute(_PAGES):
        if file is None:  # crawled with warc = false, or a cluster worker's file
            result.skipped[NO_WARC_RECORD] += 1
            continue
        if file not in present:
            present[file] = (where / file).is_file()
        if not present[file]:
            result.skipped[WARC_FILE_MISSING] += 1
            continue
        try:
            path = mirror_path(url)
        except UrlError:
            result.skipped["not an http(s) URL"] += 1
            continue
        if not size and not _is_html(ctype):  # the crawl read no body that is not HTML
            result.skipped["not downloaded"] += 1
            continue
        if adjust:
            path = _adjusted(path, ctype)
        if path in taken:
            result.skipped[SAME_FILE] += 1
            result.same_file.append((url, taken[path]))
            continue
        taken[path] = url
        pages.append(_Page(url, path, file, offset, size, dup, ctype))
    directories = {p.path[:i] for p in pages for i in range(1, len(p.path))}
    return [
        _Page(p.url, (*p.path[:-1], p.path[-1] + SHADOWED), *_rest(p))
        if p.path in directories
        else p
        for p in pages
    ]


def _rest(p: _Page) -> tuple[str, int, int, str | None, str | None]:
    return p.warc_file, p.warc_offset, p.size, p.duplicate_of, p.content_type


def write_mirror(
    db: Path, out: Path, *, convert_links: bool = False, adjust_extension: bool = False
) -> MirrorResult:
    """Write the bodies of the crawl file ``db`` under the directory ``out`` (made if
    missing; files already there are replaced) as the module docstring says;
    ``adjust_extension``: an HTML page's file name ends in ``.html`` (wget's ``-E``).

    Raises:
        StoreError: ``db`` is not a readable crawl file (as ``core.storage.export.export``).
        OSError: ``out`` cannot be made or opened as a directory.
    """
    result = MirrorResult()
    with contextlib.closing(open_crawl(db)) as conn:
        try:
            pages = _plan(conn, db.parent, result, adjust=adjust_extension)
            ((others,),) = conn.execute(_NOT_2XX)
            if others:  # every page is accounted for (issue #25 trial 9)
                result.skipped[NO_2XX] = int(others)
            files = {p.url: p.path for p in pages}
            if convert_links:
                for url, kept in result.same_file:  # /d/index.html: the file of /d/
                    files.setdefault(url, files[kept])
                hops = dict(conn.execute(_REDIRECTS))
                for url in hops:  # a chain is followed to its end (issue #25 trial 10)
                    target, final = None, hops[url]
                    for _ in range(_CHAIN_HOPS):
                        target = files.get(final)
                        if target is not None or final not in hops:
                            break
                        final = hops[final]
                    if target is not None:
                        files.setdefault(url, target)
                strip = strip_params_of(conn)
                by_key: dict[str, tuple[str, ...]] = {}
                for url, path in files.items():
                    by_key.setdefault(urls.normalize(url, strip), path)
            out.mkdir(parents=True, exist_ok=True)
            root = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                hosts: set[str] = set()
                for page in pages:
                    record = _record(conn, db.parent, page, result)
                    if record is None:
                        continue
                    body = record.body
                    if convert_links and _is_html(page.content_type):
                        body, converted, absolute = _convert(record, page, files, by_key, strip)
                        result.links_converted += converted
                        result.links_absolute += absolute
                    if _write(root, page.path, body):
                        result.files += 1
                        hosts.add(page.path[0])
                        result.cut += _truncated(record) == "length"
                    else:
                        result.skipped[IN_THE_WAY] += 1
                result.hosts = len(hosts)
            finally:
                os.close(root)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read {db.name}: {' '.join(str(exc).split())}") from None
    return result


def _record(
    conn: sqlite3.Connection, where: Path, page: _Page, result: MirrorResult
) -> ArchivedRecord | None:
    """The WARC record holding ``page``'s body (a revisit's: its original's), or
    ``None`` with the reason counted."""
    file, offset, size = page.warc_file, page.warc_offset, page.size
    try:
        record = read_record(where / file, offset, size)
        if record.rec_type == "revisit" and page.duplicate_of is not None:
            found = conn.execute(_RECORD, (page.duplicate_of,)).fetchone()
            if found is None or found[0] is None:
                result.skipped[NO_WARC_RECORD] += 1
                return None
            record = read_record(where / found[0], found[1], found[2])
    except StoreError:
        result.skipped[NO_WARC_RECORD] += 1
        return None
    truncated = _truncated(record) == "unspecified"
    if record.rec_type != "response":
        result.skipped["no body in its WARC record"] += 1
        return None
    if truncated and not record.body:
        result.skipped["not downloaded"] += 1
        return None
    return record


def _truncated(record: ArchivedRecord) -> str | None:
    """``record``'s ``WARC-Truncated`` (``length``: cut at the byte cap, ``unspecified``:
    not downloaded), ``None`` when whole."""
    return dict(record.warc_headers).get("WARC-Truncated")


def _is_html(content_type: str | None) -> bool:
    return (content_type or "").split(";", 1)[0].strip().lower() in _HTML_TYPES


def _write(root: int, path: tuple[str, ...], body: bytes) -> bool:
    """Write ``body`` at ``path`` under the directory descriptor ``root``, each
    directory made and opened without following a symbolic link; ``False`` when
    something not ours is in the way (a symlink, a file where a directory goes)."""
    fds: list[int] = []
    try:
        at = root
        for name in path[:-1]:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o755, dir_fd=at)
            at = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                         dir_fd=at)  # fmt: skip
            fds.append(at)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path[-1], flags, 0o644, dir_fd=at)
        with open(fd, "wb") as f:
            f.write(body)
        return True
    except (NotADirectoryError, IsADirectoryError, FileExistsError):
        return False
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symbolic link, which O_NOFOLLOW refuses
            return False
        raise
    finally:
        for fd in fds:
            os.close(fd)


def _href(source: tuple[str, ...], target: tuple[str, ...], fragment: str) -> str:
    """The relative URL from the file ``source`` to the file ``target``, each name
    percent-encoded (``%``, ``?``, ``#`` escaped), ``./`` before a first segment with a
    ``:`` (it would read as a scheme), the ``#fragment`` kept."""
    rel = posixpath.relpath("/" + "/".join(target), posixpath.dirname("/" + "/".join(source)))
    href = "/".join(quote(name, safe="!$&'()*+,;=:@-._~") for name in rel.split("/"))
    if ":" in href.split("/", 1)[0]:
        href = "./" + href
    return href + fragment


#: A byte the page's charset cannot decode stands in the parsed text as the
#: private-use character U+F700 + the byte, and is written back as that byte: the page
#: keeps its bytes but for its links, as wget's ``-k`` leaves them (a ``"replace"``
#: decode wrote U+FFFD for each; issue #25).
_KEPT_BASE: Final = 0xF700
_KEPT = re.compile("[\uf700-\uf7ff]")
#: Codecs whose pieces cannot be encoded one by one (a BOM or a shift state each).
_STATEFUL = ("utf-16", "utf-32", "iso2022", "hz")


def _keep_bytes(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeDecodeError):
        raise err
    raw = err.object[err.start : err.end]
    return "".join(chr(_KEPT_BASE + b) for b in raw), err.end


codecs.register_error("crawldeck.keep-bytes", _keep_bytes)


def _decode(body: bytes, charset: str) -> tuple[str, bool]:
    """``body`` as text in ``charset``, and whether its undecodable bytes are kept as
    ``_KEPT`` characters (``_encode`` writes them back); not when the text already has
    such characters or the codec has a state (then each is U+FFFD)."""
    text = body.decode(charset, "replace")
    if "\ufffd" not in text or _KEPT.search(text):
        return text, False
    if codecs.lookup(charset).name.startswith(_STATEFUL):
        return text, False
    return body.decode(charset, "crawldeck.keep-bytes"), True


def _encode(text: str, charset: str, kept: bool) -> bytes:
    """``text`` in ``charset`` (a character it lacks as a character reference), the
    ``_KEPT`` characters as their bytes when ``kept``."""
    if not kept:
        return text.encode(charset, "xmlcharrefreplace")
    out, at = bytearray(), 0
    for match in _KEPT.finditer(text):
        out += text[at : match.start()].encode(charset, "xmlcharrefreplace")
        out.append(ord(match.group()) - _KEPT_BASE)
        at = match.end()
    out += text[at:].encode(charset, "xmlcharrefreplace")
    return bytes(out)


#: One attribute of a start tag's text, as ``html.parser`` reads them: its name, and
#: its value quoted either way or bare.
_ATTRIBUTE: Final = re.compile(
    r"""[\s/]*([^\s/>=][^\s/>=]*)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]*))?"""
)


class _StartTags(HTMLParser):
    """The start tags of a page's text: ``(offset, name, attributes, raw text)``, the
    offset in characters of ``text``, the attributes decoded (``html.parser``)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[int, str, dict[str, str], str]] = []
        self._lines = [0] + [found.end() for found in re.finditer("\n", text)]
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raw = self.get_starttag_text() or ""
        line, column = self.getpos()
        first: dict[str, str] = {}
        for name, value in attrs:
            first.setdefault(name, value or "")  # a repeated attribute: the first counts
        self.tags.append((self._lines[line - 1] + column, tag, first, raw))

    handle_startendtag = handle_starttag


def _with_value(raw: str, name: str, value: str) -> str:
    """Start tag text ``raw`` with the value of its first attribute ``name`` set to
    ``value`` (escaped for its quotes), every other character as it was."""
    at = re.match(r"<[^\s/>]+", raw)
    pos = at.end() if at else len(raw)
    while (found := _ATTRIBUTE.match(raw, pos)) is not None and found.end() > pos:
        if found.group(1).lower() == name and found.group(2) is not None:
            old = found.group(2)
            quote_char = old[0] if old[:1] in ("'", '"') else '"'
            escaped = value.replace("&", "&amp;").replace(quote_char, html.escape(quote_char))
            start, end = found.span(2)
            return raw[:start] + quote_char + escaped + quote_char + raw[end:]
        pos = found.end()
    return raw


def _convert(
    record: ArchivedRecord,
    page: _Page,
    files: dict[str, tuple[str, ...]],
    by_key: dict[str, tuple[str, ...]],
    strip: tuple[str, ...],
) -> tuple[bytes, int, int]:
    """``record``'s HTML with its links to mirrored pages made relative and its relative
    links to other pages made absolute (module docstring), in its own charset; and how
    many of each it changed (none: the body as is). A link is to a mirrored page when
    its URL is one (``files``) or has its dedupe key (``by_key``: ``urls.normalize``
    with the crawl's ``strip``, so ``/b?sessionid=2`` is the ``/b`` the crawl fetched
    for it: issue #25 trial 13). Only the attribute values change (module docstring);
    a ``<base>`` start tag is removed."""
    charset = body_charset(record)
    text, kept = _decode(record.body, charset)
    tags = _StartTags(text).tags
    base = page.url
    bases = [tag for tag in tags if tag[1] == "base"]
    for _, _, attrs, _ in bases:
        if "href" in attrs:  # the first base with an href counts, as in a browser
            with contextlib.suppress(CrawldeckError):
                base = urls.clean(attrs["href"], page.url)
            break
    edits: list[tuple[int, int, str]] = []  # (start, end, new text) in ``text``
    converted = absolute = 0
    for offset, tag, attrs, raw in tags:
        if text[offset : offset + len(raw)] != raw:
            continue  # a position html.parser reported off: leave the tag as it is
        if tag == "base":
            edits.append((offset, offset + len(raw), ""))
            continue
        new_raw = raw
        for attr in ("href", "src"):
            value = attrs.get(attr)
            if not value:
                continue
            fragment = "#" + value.split("#", 1)[1] if "#" in value else ""
            try:  # its query in the page's encoding, as the crawl fetched it
                found = urls.clean(query_encoded(value, charset), base)
            except CrawldeckError:
                continue
            target = files.get(found)
            if target is None:
                target = by_key.get(urls.normalize(found, strip))
            if target is not None:
                new_raw = _with_value(new_raw, attr, _href(page.path, target, fragment))
                converted += 1
            elif not _ABSOLUTE.match(value.strip()):
                new_raw = _with_value(new_raw, attr, found + fragment)
                absolute += 1
        if new_raw != raw:
            edits.append((offset, offset + len(raw), new_raw))
    if not edits:
        return record.body, 0, 0
    parts, at = [], 0
    for start, end, new_text in edits:
        parts += [text[at:start], new_text]
        at = end
    parts.append(text[at:])
    return _encode("".join(parts), charset, kept), converted, absolute


__all__ = ["MirrorResult", "mirror_path", "mirror_url", "write_mirror"]
