"""Links and robots directives of an HTML page, with selectolax (lexbor).

``extract_links`` parses the page once and walks one CSS selection
(``base``, ``a``, ``area``, ``frame``, ``iframe``, ``meta``, ``link``, ``title``) in
document order, then reads the visible text. It returns the raw ``href``/``src``
strings; resolving them against ``Extracted.base`` and cleaning them is the engine's
job (``core.policy.urls.clean``), as is refusing non-http(s) ones (``mailto:`` and the like
are returned as found).

Rules applied (sources):
- ``<base href>``: the first one in the document, resolved against the page URL (HTML
  Standard, "document base URL"); ignored unless it resolves to http(s).
- ``<a href>``/``<area href>`` whose ``rel`` token list holds ``nofollow``
  (case-insensitive, HTML Standard "link types") are skipped; so are empty hrefs and
  hrefs that are only a fragment (``#top``: the same page).
- ``Extracted.anchors``: each link's anchor text, as Scrapy's ``Link.text``: the text
  of the ``<a>`` (its descendants' text nodes), else the ``alt`` of the first ``<img>``
  in it that has one (an image link), and an ``<area>``'s ``alt``; ASCII whitespace
  stripped and collapsed, cut at ``ANCHOR_MAX_CHARS`` (200). A link written several
  times keeps the first text that is not empty; a frame has none. An ``<a>`` cannot
  hold another (the parser closes it), so the texts read are disjoint parts of the
  page: linear in it.
- ``<frame src>`` and ``<iframe src>`` are links too, in document order among the
  ``<a>`` (issue #13 item 5: a framed page's content is in its frames); lexbor drops a
  ``<frame>`` outside a ``<frameset>`` as browsers do (HTML Standard, "in body").
- ``Extracted.title``: the text of the first ``<title>`` of the HTML namespace (not an
  SVG or MathML ``<title>``, HTML Standard ``document.title``), with ASCII whitespace
  stripped and collapsed, cut at ``TITLE_MAX_CHARS`` (1 000); the scan stops there,
  so a hostile title of megabytes costs no more than its parse.
- ``Extracted.canonical``: the raw ``href`` of the first ``<link>`` in ``<head>`` whose
  ``rel`` token list holds ``canonical`` (ASCII case-insensitive; RFC 6596 defines the
  relation); ``None`` when there is none or its ``href`` is empty. Only ``<head>``
  counts, as Google's documentation on canonical URLs says it does (one in the body
  is ignored, so user content in a page cannot name its canonical URL).
  Thousands of them cost one CSS match each (linear in the page).
- ``Extracted.simhash``: ``core.policy.simhash.simhash64`` of the text of ``<body>`` (text
  nodes joined by a space), without ``<script>``, ``<style>``, ``<noscript>``,
  ``<template>`` and ``<iframe>`` (an iframe's content is fallback text a browser
  never shows); ``None`` when that text has no word token (then ``simhash64`` is 0,
  which a real text hashes to with probability 2**-64), and for a frameset page (no
  ``<body>``). Text hidden by CSS counts: no style is applied.
- ``<meta name="robots">`` and ``<meta name="TOKEN">`` (names case-insensitive) and the
  ``X-Robots-Tag`` header (Google's robots meta tag specification, also honoured by
  Bing): ``nofollow`` or ``none`` -> no links; ``noindex`` or ``none`` -> ``noindex``.
- ``Extracted.refresh``: the target of a refresh (``parse_refresh``), from the first
  ``<meta http-equiv="refresh" content>`` (keyword ASCII case-insensitive, anywhere in
  the document, HTML Standard "refresh" pragma) whose ``content`` parses, else from the
  ``Refresh`` response header (same syntax; HTML Standard "initialise the document
  object" and its registration in §16). The standard looks at the header first and
  Chromium keeps whichever refresh has the shorter delay; here the markup's refresh
  wins when both are present (a page that has both almost always repeats one target).
  A ``<meta>`` inside ``<noscript>`` is ignored, as by a browser with scripting on
  (there ``<noscript>`` holds text, not elements) and by Scrapy since 2.11.2
  (``METAREFRESH_IGNORE_TAGS = ["noscript"]``): anti-bot pages put a refresh to a
  "enable JavaScript" page there. ``<template>`` content is inert and not looked at.
  ``refresh`` is ``None`` for a reload (no URL, an empty one, or one that resolves to
  the page itself) and when the delay is over ``REFRESH_MAX_DELAY_S`` (100 s, Scrapy's
  ``METAREFRESH_MAXDELAY``): a page that refreshes after minutes is an auto-reloading
  page (news, dashboards), not a redirect. ``nofollow`` does not clear it: a refresh is
  a redirect, not a link.
- Encoding (HTML Standard §13.2.3, "determining the character encoding"): a byte-order
  mark, else the ``charset`` of ``Content-Type``, else a ``<meta charset>`` (or
  ``http-equiv=content-type``) in the first 1024 bytes, UTF-16 there read as UTF-8,
  else UTF-8 when the body is valid UTF-8 and windows-1252 when not (the Encoding
  Standard's default for HTML, as browsers read an undeclared Latin-1 page; issue #25
  trial 12: its title was stored with U+FFFD where ``show`` read it right). Labels
  are read as the Encoding Standard (§4.2) maps them
  (``w3lib.encoding.resolve_encoding``: ``iso-8859-1`` and ``ascii`` are windows-1252,
  ``shift_jis`` is cp932, ``euc-kr`` is cp949, ``gb2312``/``gbk`` are gb18030, ``big5``
  is Big5-HKSCS); a label that names no Encoding Standard encoding (``utf-32``,
  ``utf-7``, ``base64``, ``punycode``, EBCDIC) is ignored like an unknown one. The
  body is decoded in Python with ``errors="replace"`` (invalid bytes become U+FFFD,
  one per maximal invalid subsequence, as in a browser) and lexbor parses the text,
  so no invalid byte can take the markup after it. A link's query is percent-encoded
  in that encoding, as a browser sends it (``query_encoded``; URL Standard §4.4); its
  path and fragment are UTF-8. Nothing here raises on bad input.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote

import ada_url
from multidict import MultiMapping
from selectolax.lexbor import LexborHTMLParser, LexborNode
from w3lib.encoding import html_body_declared_encoding, resolve_encoding

from crawldeck.core.policy.simhash import simhash64

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
#: One selection in document order; rel=nofollow is filtered by lexbor, not in Python.
_SELECTOR = (
    "base[href], meta[name][content], meta[http-equiv][content], "
    "a[href]:not([rel~=nofollow i]), area[href]:not([rel~=nofollow i]), "
    "frame[src], iframe[src], head link[rel~=canonical i][href], "
    "title:not(svg title, math title)"
)
#: Elements whose text is not the page's visible text (``Extracted.simhash``).
_NOT_TEXT = ["script", "style", "noscript", "template", "iframe"]
#: The longest ``Extracted.title`` kept, in characters.
TITLE_MAX_CHARS = 1000
_NOT_ASCII_WS = re.compile(r"[^\t\n\f\r ]+")
_WS = " \t\n\r\f"  # ASCII whitespace, stripped from URLs by the HTML Standard
#: Codecs whose documents' URLs are UTF-8 all the same (URL Standard §4.4: UTF-16
#: documents encode their URLs as UTF-8).
_UTF8_URLS = frozenset({"utf-8", "utf-16-le", "utf-16-be"})
#: A URL that starts with a scheme (URL Standard §4.4, "scheme start state").
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
#: The ASCII characters ``str.split()`` takes for whitespace that ``_WS`` does not hold.
_ODD_ASCII_SPACE = re.compile(r"[\x0b\x1c-\x1f]")
#: What the URL parser strips around a URL string: C0 controls and space (WHATWG URL).
_C0_SPACE = "".join(chr(c) for c in range(0x21))
_DIGITS = "0123456789"
#: Byte-order marks and the codec each announces (HTML Standard "BOM sniff").
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
#: Python codecs (canonical names, as ``codecs.lookup(name).name`` gives them) of the
#: Encoding Standard's encodings (§4.2, "Names and labels"); ``replacement`` and
#: ``x-user-defined`` have none. Written out rather than looked up at import: a lookup
#: loads the codec's module, and the CJK ones (``_codecs_cn`` and the like) cost 1.3
#: MiB in every process that imports this module, the crawl's and each parse worker's
#: (issue #22 item 1); a codec is now loaded by the first page that uses it.
_WHATWG_CODECS = frozenset(
    (
        "utf-8", "cp866", "iso8859-2", "iso8859-3", "iso8859-4", "iso8859-5", "iso8859-6",
        "iso8859-7", "iso8859-8", "iso8859-10", "iso8859-13", "iso8859-14", "iso8859-15",
        "iso8859-16", "koi8-r", "koi8-u", "mac-roman", "cp874", "cp1250", "cp1251",
        "cp1252", "cp1253", "cp1254", "cp1255", "cp1256", "cp1257", "cp1258",
        "mac-cyrillic", "gb18030", "big5hkscs", "euc_jp", "iso2022_jp", "cp932", "cp949",
        "utf-16-le", "utf-16-be",
    )
)  # fmt: skip
#: Encoding Standard labels that ``resolve_encoding`` does not know.
_EXTRA_LABELS = {
    "iso-8859-8-i": "iso8859-8",
    "csiso88598i": "iso8859-8",
    "logical": "iso8859-8",
    "x-mac-cyrillic": "mac-cyrillic",
    "x-mac-ukrainian": "mac-cyrillic",
    "x-mac-roman": "mac-roman",
    "unicode-1-1-utf-8": "utf-8",
    "unicode11utf8": "utf-8",
    "unicode20utf8": "utf-8",
    "x-unicode20utf8": "utf-8",
    "unicode": "utf-16-le",
    "ucs-2": "utf-16-le",
    "csunicode": "utf-16-le",
    "iso-10646-ucs-2": "utf-16-le",
    "unicodefeff": "utf-16-le",
    "unicodefffe": "utf-16-be",
}
#: The most characters of a link's anchor text kept (``Extracted.anchors``).
ANCHOR_MAX_CHARS = 200
#: The longest refresh delay taken as a redirect (Scrapy's ``METAREFRESH_MAXDELAY``).
REFRESH_MAX_DELAY_S = 100
#: The response headers ``extract_links`` reads (lowercase); a caller that sends the
#: headers elsewhere (``core.net.parse``) needs to send only these.
HEADERS_USED = ("content-type", "x-robots-tag", "refresh")
#: X-Robots-Tag directives that carry their own ``name: value`` (not an agent prefix).
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
_AGENT = re.compile(r"[a-z0-9_-]+")
_META_SPLIT = re.compile(r"[\s,]+")


@dataclass(frozen=True, slots=True)
class Extracted:
    """What a page gives the crawl.

    Attributes:
        links: raw ``href`` values of ``<a>``/``<area>`` and ``src`` values of
            ``<frame>``/``<iframe>`` (surrounding whitespace stripped), deduplicated,
            in document order; empty when ``nofollow`` (unless ``obey_nofollow`` is
            off).
        base: the URL to resolve ``links`` against: ``<base href>`` resolved against
            the page URL, or the page URL.
        nofollow: meta robots / X-Robots-Tag said ``nofollow`` or ``none``.
        noindex: meta robots / X-Robots-Tag said ``noindex`` or ``none``.
        refresh: the raw URL a meta refresh (else a ``Refresh`` header) sends the
            page to, surrounding C0 controls and spaces stripped, to be resolved
            against ``base`` like ``links``; ``None`` when there is none, it is a
            reload, or its delay is over ``REFRESH_MAX_DELAY_S`` (module docstring).
        title: the document's ``<title>`` text, ASCII whitespace collapsed, at most
            ``TITLE_MAX_CHARS`` characters (``None``: none, or only whitespace).
        canonical: the raw ``href`` of the first ``<link rel="canonical">`` of
            ``<head>``, surrounding whitespace stripped (to be resolved against
            ``base``), ``None`` when there is none or it is empty.
        simhash: the 64-bit SimHash of the page's visible text (an unsigned int,
            ``core.policy.simhash.simhash64``), ``None`` when the page has no text.
        cut: why ``links`` may hold fewer links than the page: ``links_cut: kept N
            of M links (max_links_per_page)`` or ``parse_cut: links read from the
            first N of M bytes (parse_max_bytes)`` (``core.net.parse``); ``None`` when
            nothing was cut.
        anchors: the anchor text of links of ``links`` (raw ``href`` -> text, at most
            ``ANCHOR_MAX_CHARS`` characters, module docstring); a link without text
            has no entry.
    """

    links: list[str]
    base: str
    nofollow: bool
    noindex: bool
    refresh: str | None = None
    title: str | None = None
    canonical: str | None = None
    simhash: int | None = None
    cut: str | None = None
    anchors: dict[str, str] = field(default_factory=dict)


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


def _codec(label: str) -> str | None:
    """The Python codec of an Encoding Standard label (§4.2), or ``None``.

    ``"ISO-8859-1"`` -> ``"cp1252"``, ``"x-sjis"`` -> ``"cp932"``, ``"utf-16"`` ->
    ``"utf-16-le"``; ``"utf-32"``, ``"base64"``, ``"no-such"`` -> ``None``.
    """
    key = label.strip().strip("\"'").strip().lower()
    if not key:
        return None
    name = _EXTRA_LABELS.get(key) or resolve_encoding(key)
    return _whatwg(name)


def _whatwg(name: str | None) -> str | None:
    """``name`` (a Python codec name) canonical, when it is an Encoding Standard
    encoding; ``utf-16`` is UTF-16LE there, and ``gbk`` is decoded as gb18030 (w3lib
    2.6 resolves ``gb2312`` to ``gbk``, 2.5 to ``gb18030``: a fresh install decoded
    GBK pages as windows-1252). Else ``None``."""
    if name is None:
        return None
    try:
        canonical = codecs.lookup(name).name
    except LookupError:
        return None
    if canonical == "utf-16":
        return "utf-16-le"
    if canonical == "gbk":  # the Encoding Standard's GBK decoder is gb18030's (§10.1.1)
        return "gb18030"
    return canonical if canonical in _WHATWG_CODECS else None


def _charset(headers: Mapping[str, str]) -> str | None:
    """The Python codec of the first ``charset`` in Content-Type, or ``None``."""
    for value in _header_values(headers, "content-type"):
        for param in value.split(";")[1:]:
            name, _, label = param.partition("=")
            if name.strip().lower() == "charset":
                return _codec(label)
    return None


def decode(body: bytes, headers: Mapping[str, str]) -> str:
    """``body`` as text, in the encoding the HTML Standard picks (module docstring).

    Invalid byte sequences become U+FFFD (``errors="replace"``), so the text after
    them is kept. Never raises.
    """
    return _decoded(body, headers)[0]


def _decoded(body: bytes, headers: Mapping[str, str]) -> tuple[str, str]:
    """``decode``'s text and the Python codec it decoded with."""
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(bom_codec, errors="replace"), bom_codec
    codec = _charset(headers)
    if codec is None:
        declared = _whatwg(html_body_declared_encoding(body[:1024]))
        if declared is None:  # undeclared: UTF-8 when it is, else windows-1252
            try:
                return body.decode("utf-8"), "utf-8"
            except UnicodeDecodeError:
                return body.decode("cp1252", errors="replace"), "cp1252"
        # The prescan reads a UTF-16 declaration as UTF-8 (HTML Standard §13.2.3.2).
        codec = "utf-8" if declared.startswith("utf-16") else declared
    return body.decode(codec, errors="replace"), codec


def query_encoded(href: str, codec: str) -> str:
    """``href`` with the non-ASCII characters of its query percent-encoded in the
    page's ``codec`` (a Python codec name or alias), as a browser requests the link: the URL
    Standard parses a document's URLs with the document's encoding, which applies to
    the query only (§4.4, "query state"; a character the encoding lacks becomes
    ``%26%23N%3B``, its ``&#N;``), so ``?name=café`` on a windows-1252 page is
    ``?name=caf%E9``, as Scrapy's ``safe_url_string(url, response.encoding)`` sends it
    (issue #25 trial 18: it was sent as UTF-8, ``caf%C3%A9``). The path and the
    fragment are UTF-8 whatever the page's encoding, and so is every part of a URL
    whose scheme is not http(s); those are left to the URL parser. A UTF-8 or
    UTF-16 page's links are returned as they are.
    """
    if href.isascii():
        return href
    try:
        codec = codecs.lookup(codec).name
    except LookupError:
        return href
    if codec in _UTF8_URLS:
        return href
    at = href.find("?")
    if at < 0 or (_SCHEME.match(href) and not href[:6].lower().startswith(("http:", "https:"))):
        return href
    end = href.find("#", at)
    end = len(href) if end < 0 else end
    query = href[at + 1 : end]
    if query.isascii():
        return href
    encoded = "".join(
        c if c.isascii() else quote(c.encode(codec, errors="xmlcharrefreplace"), safe="")
        for c in query
    )
    return href[: at + 1] + encoded + href[end:]


def parse_refresh(content: str) -> tuple[int, str | None] | None:
    """A refresh declaration (``<meta http-equiv=refresh content>``, ``Refresh``
    header) read by the HTML Standard's "shared declarative refresh steps".

    Returns ``(delay_s, url)``: the whole seconds of the delay (digits; dots and the
    digits after them are read and ignored, so ``"1.5"`` is 1 and ``".5"`` is 0) and
    the raw URL (C0 controls and spaces around it stripped), ``None`` when the
    declaration has none (a reload). Returns ``None`` when ``content`` declares no
    refresh at all (no delay, or junk after it), so that a later declaration counts.

    ``"0; URL='/next'"``, ``"0;url=/next"``, ``"0, /next"``, ``"0 /next"``,
    ``"5;URL = \"/next"`` (unterminated quote: to the end) -> ``(d, "/next")``;
    ``"0; url"`` -> ``(0, "url")`` (no ``=``: ``url`` is the URL); ``"30"`` ->
    ``(30, None)``; ``"soon"``, ``"-1; url=/x"`` -> ``None``. Never raises.
    """
    n = len(content)
    pos = _skip_ws(content, 0)
    start = pos
    while pos < n and content[pos] in _DIGITS:
        pos += 1
    if pos == start and (pos >= n or content[pos] != "."):
        return None
    delay = int(content[start:pos]) if pos > start else 0
    while pos < n and (content[pos] in _DIGITS or content[pos] == "."):
        pos += 1
    if pos < n:
        if content[pos] not in ";," and content[pos] not in _WS:
            return None
        pos = _skip_ws(content, pos)
        if pos < n and content[pos] in ";,":
            pos += 1
        pos = _skip_ws(content, pos)
    if pos >= n:
        return delay, None
    url = content[pos:]
    i = 0
    if url[0] in "Uu":
        if url[1:2] not in ("R", "r") or url[2:3] not in ("L", "l"):
            return delay, _url_or_none(url)
        i = _skip_ws(url, 3)
        if url[i : i + 1] != "=":
            return delay, _url_or_none(url)
        i = _skip_ws(url, i + 1)
    quote = url[i : i + 1]
    if quote in ("'", '"'):
        url = url[i + 1 :]
        end = url.find(quote)
        if end >= 0:
            url = url[:end]
    else:
        url = url[i:]
    return delay, _url_or_none(url)


def _skip_ws(text: str, pos: int) -> int:
    """The first index at or after ``pos`` that is not ASCII whitespace."""
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def _url_or_none(url: str) -> str | None:
    """``url`` stripped as the URL parser strips it; ``None`` when nothing is left."""
    return url.strip(_C0_SPACE) or None


def _in_noscript(node: LexborNode) -> bool:
    """Whether ``node`` has a ``<noscript>`` ancestor."""
    parent = node.parent
    while parent is not None:
        if parent.tag == "noscript":
            return True
        parent = parent.parent
    return False


def _title(text: str) -> str | None:
    """``text`` with ASCII whitespace stripped and collapsed (HTML Standard, "strip and
    collapse ASCII whitespace"), cut at ``TITLE_MAX_CHARS``; ``None`` when empty.
    Reads no further than the words it keeps."""
    words: list[str] = []
    size = 0
    for match in _NOT_ASCII_WS.finditer(text):
        words.append(match.group())
        size += len(words[-1]) + 1
        if size > TITLE_MAX_CHARS:
            break
    return " ".join(words)[:TITLE_MAX_CHARS] or None


def _image_alt(node: LexborNode) -> str:
    """The ``alt`` of the first ``<img>`` in ``node`` that has one that is not only
    whitespace, ``""`` when none has (an image link's anchor text)."""
    for image in node.css("img"):
        alt = image.attrs.get("alt") or ""
        if alt and not alt.isspace():
            return alt
    return ""


def _words(anchors: dict[str, str]) -> None:
    """Turn each raw anchor text of ``anchors`` (href -> text, at most
    ``4 * ANCHOR_MAX_CHARS`` characters, at least one word) into its words split on ASCII
    whitespace, joined by one space and cut at ``ANCHOR_MAX_CHARS``, in place.

    ``str.split()`` splits on ASCII whitespace (HTML Standard: tab, LF, FF, CR, space)
    and also on ``\\x0b``, ``\\x1c``-``\\x1f`` and non-ASCII spaces (``\\xa0``, ...),
    which the rule keeps inside words; so one check over the page's texts together
    picks ``str.split`` (about 3x cheaper than a regex's ``findall`` a link, the common
    case) or the regex for every text, with the same result."""
    joined = "".join(anchors.values())
    if joined.isascii() and _ODD_ASCII_SPACE.search(joined) is None:
        for href, text in anchors.items():
            anchors[href] = " ".join(text.split())[:ANCHOR_MAX_CHARS]
    else:
        for href, text in anchors.items():
            anchors[href] = " ".join(_NOT_ASCII_WS.findall(text))[:ANCHOR_MAX_CHARS]


def _simhash(tree: LexborHTMLParser) -> int | None:
    """The SimHash of ``tree``'s visible text (module docstring); removes the
    elements that are not text from ``tree``."""
    tree.strip_tags(_NOT_TEXT)
    body = tree.body
    if body is None:
        return None
    return simhash64(body.text(separator=" ")) or None


def _refresh_target(declared: tuple[int, str | None] | None, base: str, url: str) -> str | None:
    """The target of a parsed refresh, or ``None`` for none, a reload or a long delay."""
    if declared is None:
        return None
    delay, target = declared
    if target is None or delay > REFRESH_MAX_DELAY_S:
        return None
    if _resolved(base, target).partition("#")[0] == _resolved(url, "").partition("#")[0]:
        return None
    return target


def extract_links(
    body: bytes,
    url: str,
    headers: Mapping[str, str],
    token: str,
    *,
    obey_nofollow: bool = True,
    max_links: int | None = None,
) -> Extracted:
    """Links to follow from an HTML page, and its robots directives.

    Args:
        body: the (possibly truncated) response body, any encoding.
        url: the page URL (absolute), the base when there is no usable ``<base href>``.
        headers: the response headers (``Content-Type`` charset, ``X-Robots-Tag``,
            ``Refresh``: ``HEADERS_USED``).
        token: our robots product token (``config.robots_token``) for
            ``<meta name="TOKEN">`` and ``X-Robots-Tag: TOKEN: ...``.
        obey_nofollow: ``config.obey_nofollow``: when ``False`` a ``nofollow`` page's
            links are returned too (``Extracted.nofollow`` still says it).
        max_links: the most links returned (``config.max_links_per_page``): the
            first ones in document order, after deduplication, with ``cut`` saying
            how many there were; ``None``: no cap.

    Returns:
        ``Extracted``; see its attributes and the module docstring for the rules.
        A body lexbor cannot parse at all gives no links (the header directives still
        count). Never raises.
    """
    tags = robots_tags(headers, token)
    tok = token.strip().lower()
    base: str | None = None
    hrefs: list[str] = []
    anchors: dict[str, str] = {}
    refresh: tuple[int, str | None] | None = None
    title: str | None = None
    canonical: str | None = None
    seen_title = seen_canonical = False
    tree: LexborHTMLParser | None = None
    codec = "utf-8"
    try:
        text, codec = _decoded(body, headers)
        tree = LexborHTMLParser(text)
        nodes = tree.css(_SELECTOR)
    except Exception:  # selectolax on pathological input: no links rather than a crash
        nodes = []
    for node in nodes:
        tag = node.tag
        if tag == "a" or tag == "area" or tag == "frame" or tag == "iframe":
            attribute = "href" if tag == "a" or tag == "area" else "src"
            href = (node.attrs.get(attribute) or "").strip(_WS)
            if href and href[0] != "#":
                if not href.isascii():  # its query in the page's encoding
                    href = query_encoded(href, codec)
                hrefs.append(href)
                if href not in anchors and tag != "frame" and tag != "iframe":
                    # written out, not a call: one a link (the anchor text's rules,
                    # module docstring); text[:800]: split no more than is kept. The
                    # words are split after the loop, all texts at once (_words).
                    text = node.text(deep=True) if tag == "a" else node.attrs.get("alt") or ""
                    if (not text or text.isspace()) and tag == "a":
                        text = _image_alt(node)
                    if text and not text.isspace():
                        text = text[: 4 * ANCHOR_MAX_CHARS]
                        if text.strip(_WS):  # at least one word: this text is the link's
                            anchors[href] = text
        elif tag == "title":
            if not seen_title:
                seen_title = True
                title = _title(node.text())
        elif tag == "link":
            if not seen_canonical:
                seen_canonical = True
                canonical = (node.attrs.get("href") or "").strip(_WS) or None
        elif tag == "meta":
            attrs = node.attrs
            content = attrs.get("content") or ""
            name = (attrs.get("name") or "").strip().lower()
            if name == "robots" or name == tok:
                tags |= frozenset(_META_SPLIT.split(content.lower()))
            if (
                refresh is None
                and (attrs.get("http-equiv") or "").lower() == "refresh"
                and not _in_noscript(node)
            ):
                refresh = parse_refresh(content)
        elif base is None:  # the first <base href>
            base = node.attrs.get("href") or ""
    simhash: int | None = None
    if tree is not None:
        try:
            simhash = _simhash(tree)
        except Exception:  # selectolax on pathological input: no fingerprint
            simhash = None
    if refresh is None:
        for value in _header_values(headers, "refresh"):
            refresh = parse_refresh(value)
            break
    if anchors:
        _words(anchors)
    nofollow = "nofollow" in tags or "none" in tags
    noindex = "noindex" in tags or "none" in tags
    resolved = _resolve_base(url, base)
    links = [] if nofollow and obey_nofollow else list(dict.fromkeys(hrefs))
    cut: str | None = None
    if max_links is not None and len(links) > max_links:
        cut = f"links_cut: kept {max_links} of {len(links)} links (max_links_per_page)"
        del links[max_links:]
        anchors = {href: anchors[href] for href in links if href in anchors}
    elif not links:
        anchors = {}
    return Extracted(
        links=links,
        base=resolved,
        nofollow=nofollow,
        noindex=noindex,
        refresh=_refresh_target(refresh, resolved, url),
        title=title,
        canonical=canonical,
        simhash=simhash,
        cut=cut,
        anchors=anchors,
    )


def _resolve_base(url: str, href: str | None) -> str:
    """``href`` resolved against ``url`` when that gives an http(s) URL, else ``url``.

    Resolved by the WHATWG URL parser (ada), as the HTML Standard's "document base
    URL" is: ``<base href="\\\\cdn.test\\x/">`` is ``http://cdn.test/x/`` as a
    browser reads it.
    """
    if href is None:
        return url
    resolved = _resolved(url, href)
    return resolved if resolved.startswith(("http://", "https://")) else url


def _resolved(base: str, href: str) -> str:
    """``href`` parsed against ``base`` by the WHATWG URL parser (ada): its href
    (serialization, fragment included), or ``""`` when the parser refuses it."""
    try:
        return ada_url.join_url(base, href)
    except ValueError:
        return ""


__all__ = [
    "ANCHOR_MAX_CHARS",
    "HEADERS_USED",
    "REFRESH_MAX_DELAY_S",
    "TITLE_MAX_CHARS",
    "Extracted",
    "decode",
    "extract_links",
    "is_html",
    "parse_refresh",
    "query_encoded",
    "robots_tags",
]
