"""Links and robots directives of an HTML page, with selectolax (lexbor).

``extract_links`` parses the page once and walks one CSS selection
(``base``, ``a``, ``area``, ``meta``) in document order. It returns the raw ``href``
strings; resolving them against ``Extracted.base`` and cleaning them is the engine's
job (``core.urls.clean``), as is refusing non-http(s) ones (``mailto:`` and the like
are returned as found).

Rules applied (sources):
- ``<base href>``: the first one in the document, resolved against the page URL (HTML
  Standard, "document base URL"); ignored unless it resolves to http(s).
- ``<a href>``/``<area href>`` whose ``rel`` token list holds ``nofollow``
  (case-insensitive, HTML Standard "link types") are skipped; so are empty hrefs and
  hrefs that are only a fragment (``#top``: the same page).
- ``<meta name="robots">`` and ``<meta name="TOKEN">`` (names case-insensitive) and the
  ``X-Robots-Tag`` header (Google's robots meta tag specification, also honoured by
  Bing): ``nofollow`` or ``none`` -> no links; ``noindex`` or ``none`` -> ``noindex``.
- Encoding: a byte-order mark, else the ``charset`` of ``Content-Type``, else a
  ``<meta charset>`` in the first 1024 bytes, else UTF-8 (HTML Standard, "encoding
  sniffing"); undecodable bytes become U+FFFD. Nothing here raises on bad input.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from multidict import MultiMapping
from selectolax.lexbor import LexborHTMLParser

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
#: One selection in document order; rel=nofollow is filtered by lexbor, not in Python.
_SELECTOR = (
    "base[href], meta[name][content], "
    "a[href]:not([rel~=nofollow i]), area[href]:not([rel~=nofollow i])"
)
_WS = " \t\n\r\f"  # ASCII whitespace, stripped from URLs by the HTML Standard
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
#: X-Robots-Tag directives that carry their own ``name: value`` (not an agent prefix).
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
_AGENT = re.compile(r"[a-z0-9_-]+")
_META_SPLIT = re.compile(r"[\s,]+")
#: Labels the HTML Standard maps to windows-1252, which Python's codecs do not.
_WINDOWS_1252 = frozenset({"latin_1", "ascii", "iso8859-1", "us-ascii"})


@dataclass(frozen=True, slots=True)
class Extracted:
    """What a page gives the crawl.

    Attributes:
        links: raw ``href`` values of ``<a>``/``<area>`` (surrounding whitespace
            stripped), deduplicated, in document order; empty when ``nofollow``.
        base: the URL to resolve ``links`` against: ``<base href>`` resolved against
            the page URL, or the page URL.
        nofollow: meta robots / X-Robots-Tag said ``nofollow`` or ``none``.
        noindex: meta robots / X-Robots-Tag said ``noindex`` or ``none``.
    """

    links: list[str]
    base: str
    nofollow: bool
    noindex: bool


def is_html(content_type: str) -> bool:
    """Whether a Content-Type (media type, parameters allowed) is HTML or XHTML.

    ``"text/html"``, ``"Text/HTML; charset=utf-8"``, ``"application/xhtml+xml"`` -> True;
    ``""`` (no header) -> False (no sniffing).
    """
    return content_type.split(";", 1)[0].strip().lower() in _HTML_TYPES


def _header_values(headers: Mapping[str, str], name: str) -> list[str]:
    """Every value of header ``name`` (lowercase); each repeated header kept apart when
    ``headers`` is a multidict (``FetchResult.headers``), a plain mapping matched
    case-insensitively."""
    if isinstance(headers, MultiMapping):
        return list(headers.getall(name, ()))
    return [value for key, value in headers.items() if key.lower() == name]


def robots_tags(headers: Mapping[str, str], token: str) -> frozenset[str]:
    """The ``X-Robots-Tag`` directives that apply to ``token``, lowercased.

    Each header value is a comma-separated list of directives; ``AGENT: directive``
    scopes that directive and the ones after it in the same header value to ``AGENT``
    (Google's robots meta tag specification), so only directives without an agent or
    with ``token`` (case-insensitive) as agent are returned. Valued directives come
    back as ``name:value`` (``"max-snippet:20"``); ``none`` is returned as ``none``
    (not expanded). Several headers are read apart when ``headers`` is a multidict
    (``FetchResult.headers``); a plain mapping holds one value per name (a value
    joined with ``,`` from several headers keeps an agent prefix in force to its end).

    Example: ``X-Robots-Tag: noarchive`` and ``X-Robots-Tag: otherbot: noindex`` give
    ``frozenset({"noarchive"})`` for token ``crawldeck``. Never raises.
    """
    tok = token.strip().lower()
    out: set[str] = set()
    for value in _header_values(headers, "x-robots-tag"):
        agent: str | None = None
        for raw in value.split(","):
            part = raw.strip()
            name, sep, rest = part.partition(":")
            name = name.strip().lower()
            if sep and name not in _VALUED and _AGENT.fullmatch(name):
                agent = name
                name, sep, rest = rest.partition(":")
                name = name.strip().lower()
            if not name or (agent is not None and agent != tok):
                continue
            out.add(f"{name}:{rest.strip().lower()}" if sep else name)
    return frozenset(out)


def _charset(headers: Mapping[str, str]) -> str | None:
    """The Python codec name of the ``charset`` in Content-Type, or ``None``."""
    for value in _header_values(headers, "content-type"):
        for param in value.split(";")[1:]:
            name, _, label = param.partition("=")
            if name.strip().lower() == "charset":
                try:
                    return codecs.lookup(label.strip().strip("\"'")).name
                except LookupError:
                    return None
    return None


def _parser(body: bytes, headers: Mapping[str, str]) -> LexborHTMLParser:
    """The parsed document, decoded per the HTML Standard's order (see module)."""
    if not body.startswith(_BOMS):
        charset = _charset(headers)
        if charset is not None and charset != "utf-8":
            if charset in _WINDOWS_1252:
                charset = "cp1252"
            return LexborHTMLParser(body.decode(charset, errors="replace"))
        if charset == "utf-8":
            return LexborHTMLParser(body)
    return LexborHTMLParser(body, encoding=True)


def extract_links(body: bytes, url: str, headers: Mapping[str, str], token: str) -> Extracted:
    """Links to follow from an HTML page, and its robots directives.

    Args:
        body: the (possibly truncated) response body, any encoding.
        url: the page URL (absolute), the base when there is no usable ``<base href>``.
        headers: the response headers (``Content-Type`` charset, ``X-Robots-Tag``).
        token: our robots product token (``config.robots_token``) for
            ``<meta name="TOKEN">`` and ``X-Robots-Tag: TOKEN: ...``.

    Returns:
        ``Extracted``; see its attributes and the module docstring for the rules.
        A body lexbor cannot parse at all gives no links (the header directives still
        count). Never raises.
    """
    tags = robots_tags(headers, token)
    tok = token.strip().lower()
    base: str | None = None
    hrefs: list[str] = []
    try:
        nodes = _parser(body, headers).css(_SELECTOR)
    except Exception:  # selectolax on pathological input: no links rather than a crash
        nodes = []
    for node in nodes:
        tag = node.tag
        if tag == "a" or tag == "area":
            href = (node.attrs.get("href") or "").strip(_WS)
            if href and href[0] != "#":
                hrefs.append(href)
        elif tag == "meta":
            attrs = node.attrs
            name = (attrs.get("name") or "").strip().lower()
            if name == "robots" or name == tok:
                tags |= frozenset(_META_SPLIT.split((attrs.get("content") or "").lower()))
        elif base is None:  # the first <base href>
            base = node.attrs.get("href") or ""
    nofollow = "nofollow" in tags or "none" in tags
    noindex = "noindex" in tags or "none" in tags
    return Extracted(
        links=[] if nofollow else list(dict.fromkeys(hrefs)),
        base=_resolve_base(url, base),
        nofollow=nofollow,
        noindex=noindex,
    )


def _resolve_base(url: str, href: str | None) -> str:
    """``href`` resolved against ``url`` when that gives an http(s) URL, else ``url``."""
    if href is None:
        return url
    try:
        resolved = urljoin(url, href.strip(_WS))
        if urlsplit(resolved).scheme.lower() in ("http", "https"):
            return resolved
    except ValueError:
        pass
    return url


__all__ = ["Extracted", "extract_links", "is_html", "robots_tags"]
