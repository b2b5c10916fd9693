"""URL cleaning, normalization and host identity (pure: no I/O, no clock, no network).

Two spellings of every URL travel through crawldeck (docs/architecture.md, "Conventions"):

* the **URL requested** (:func:`clean`): the link as found, resolved against its base,
  fragment and userinfo removed, dot segments removed and unsafe characters
  percent-encoded, so a server that is picky about its own spelling sees the URL as a
  browser would send it, and robots.txt is checked on exactly the path that is sent;
* the **dedupe key** (:func:`normalize`): the same URL put in the normal form of
  RFC 3986 §6.2.2-§6.2.3 plus a sorted, filtered query, so trivially different
  spellings of one resource are crawled once.

:func:`host_key`, :func:`origin` and :func:`registered_domain` give the identities that
politeness, robots.txt and the crawl scope are keyed on.

Errors: every failure is a :class:`core.errors.UrlError` whose message is one line
that says why; a URL that is not http/https raises its subclass
:class:`core.errors.UnsupportedScheme`. Their ``reason`` (``"bad_url"``, ``"scheme"``)
is a :class:`core.traps.BlockReason` value.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Collection
from urllib.parse import SplitResult, quote, urlsplit

import idna
import tldextract

from crawldeck.core.errors import UnsupportedScheme, UrlError

#: The schemes crawled and their default ports (RFC 9110 §4.2.1, §4.2.2).
DEFAULT_PORTS: dict[str, int] = {"http": 80, "https": 443}

#: RFC 3986 §2.3 unreserved characters: their percent-escapes are decoded (§6.2.2.2).
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

#: Leading/trailing C0 controls and space, removed as browsers do (WHATWG URL §4.4).
_C0_OR_SPACE = "".join(chr(i) for i in range(0x21))
#: ASCII tab and newlines anywhere in a URL are removed (WHATWG URL §4.4).
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
#: Any C0 control or space, or a backslash: the fast path skips all fixing without one.
_NEEDS_FIXING = re.compile(r"[\x00-\x20\\]")

#: One DNS label of an ASCII host: letters, digits, '-' and '_' (seen in the wild).
_ASCII_HOST = re.compile(r"[a-z0-9_-]{1,63}(?:\.[a-z0-9_-]{1,63})*\.?")
#: RFC 1035 §2.3.4: at most 253 characters (without a trailing dot).
_MAX_HOST_CHARS = 254

#: The characters left as they are in a cleaned path: RFC 3986 §3.3 ``pchar`` and
#: ``/``, with ``%`` (an escape, or a stray ``%`` kept as written, as browsers do).
#: Every other character is percent-encoded as UTF-8: the WHATWG URL path
#: percent-encode set (§1.3) plus what RFC 3986 does not allow (``[ ] | \\ ^``), so
#: the URL is valid by both standards (the choice of w3lib's ``safe_url_string``).
_PATH_SAFE = "!$&'()*+,;=:@/%"
#: The same for the query (RFC 3986 §3.4 adds ``?``), with ``'`` encoded as in the
#: WHATWG URL special-query percent-encode set (§1.3) for http and https.
_QUERY_SAFE = "!$&()*+,;=:@/?%"

#: A URL that :func:`_clean_slowly` returns unchanged: http(s), lowercase ASCII host,
#: no userinfo, a port without leading zero, then only ``_PATH_SAFE`` characters in
#: the path and ``_QUERY_SAFE`` characters in a non-empty query.
_ALREADY_CLEAN = re.compile(
    r"https?://(?P<host>[a-z0-9_-]{1,63}(?:\.[a-z0-9_-]{1,63})*\.?)"
    r"(?::(?P<port>[1-9][0-9]{0,4}))?"
    r"(?:/[A-Za-z0-9\-._~%:/@!$&'()*+,;=]*(?:\?[A-Za-z0-9\-._~%:/?@!$&()*+,;=]+)?)?"
)

#: A dotted-quad IPv4 address as browsers write it (no leading zeros, no final dot).
_CANONICAL_IPV4 = re.compile(r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}"
                             r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])")  # fmt: skip
_HEX = frozenset("0123456789abcdefABCDEF")
_DIGIT_OR_DOT = frozenset("0123456789.")

#: A dot segment (RFC 3986 §3.3) in a path: ``.`` or ``..``, a dot possibly escaped as
#: ``%2e`` (WHATWG URL "single-dot/double-dot URL path segment"), followed by ``/``,
#: ``?`` or the end. Used to skip :func:`_remove_dot_segments` when there is none.
_DOT_SEGMENT = re.compile(r"/(?:\.|%2[eE]){1,2}(?=[/?]|\Z)")
_SINGLE_DOT = frozenset({".", "%2e"})
_DOUBLE_DOT = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})

#: A cleaned URL that :func:`normalize` returns unchanged when its port is not the
#: scheme's default, its path has no dot segment and no ``;`` parameter to strip:
#: lowercase host without a trailing dot, no percent-escape, no query.
_ALREADY_NORMAL = re.compile(
    r"(https?)://[a-z0-9_-]{1,63}(?:\.[a-z0-9_-]{1,63})*"
    r"(?::([1-9][0-9]{0,4}))?(/[A-Za-z0-9\-._~:/@!$&'()*+,;=]*)"
)

#: The start of a cleaned URL with a plain authority (no userinfo, not IPv6):
#: :func:`host_key` reads it without a full parse.
_SIMPLE_AUTHORITY = re.compile(r"(https?)://([a-z0-9._-]+)(?::([0-9]{1,5}))?(?=[/?]|\Z)")

#: The percent-escapes that are not in normal form (RFC 3986 §6.2.2.1-§6.2.2.2): an
#: escaped unreserved character (group 1: ALPHA 41-5A/61-7A, DIGIT 30-39, "-" 2D,
#: "." 2E, "_" 5F, "~" 7E), an escape with lowercase hex digits (group 2), or a "%"
#: that starts no escape. Escapes already in normal form are not matched, so a URL
#: full of them costs one C-level scan.
_PCT = re.compile(
    r"%(?:([46][1-9A-Fa-f]|[57][0-9Aa]|3[0-9]|2[DEde]|5[Ff]|7[Ee])"
    r"|([0-9A-Fa-f]{2})(?<![0-9A-F]{2})"
    r"|(?![0-9A-Fa-f]{2}))"
)

#: How much of a bad URL an error message shows.
_SHOW_CHARS = 80

#: The Public Suffix List from tldextract's bundled snapshot: no list URL (never
#: fetched), no cache directory (nothing written). PSL private suffixes count
#: (``github.io``, ``blogspot.com``): names under them belong to different owners.
_EXTRACT = tldextract.TLDExtract(
    suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
)


def _show(url: str) -> str:
    """``url`` as a short, one-line quoted string for an error message."""
    if len(url) > _SHOW_CHARS:
        url = url[:_SHOW_CHARS] + "..."
    return repr(url)


def _fail(message: str, scheme: bool = False) -> UrlError:
    """A ``UrlError`` with ``message`` (``UnsupportedScheme`` when ``scheme``)."""
    return UnsupportedScheme(message) if scheme else UrlError(message)


def _fix_whitespace(url: str) -> str:
    """Strip C0/space at both ends, drop tab/CR/LF, read ``\\`` as ``/`` before the query.

    WHATWG URL §4.4 (basic URL parser): leading and trailing C0 controls and spaces
    are removed, ASCII tab and newline are removed everywhere, and for special
    schemes (http, https) a backslash in the authority or path is a ``/``.
    """
    if not _NEEDS_FIXING.search(url):
        return url
    url = url.strip(_C0_OR_SPACE).translate(_TAB_NEWLINE)
    if "\\" in url:
        cut = len(url)
        for mark in "?#":
            at = url.find(mark)
            if at != -1 and at < cut:
                cut = at
        url = url[:cut].replace("\\", "/") + url[cut:]
    return url


def _ascii_host(host: str) -> str:
    """``host`` (already lowercase) as an ASCII name; raises ``UrlError`` if invalid.

    Non-ASCII names are encoded with UTS #46 non-transitional processing, as browsers
    do (WHATWG URL §3.5 "domain to ASCII", IDNA 2008); names that IDNA 2008 refuses
    but browsers still accept (symbols such as ``☃.net``) fall back to IDNA 2003
    (RFC 3490). Both map code points such as U+00AD and U+FEFF to nothing, so the
    result may be a number (``\ufeff127.1`` is ``127.1``): the caller reads IPv4 after
    this step, as WHATWG URL §3.5 does.
    """
    if not host.isascii():
        if len(host) > 4 * _MAX_HOST_CHARS:
            raise _fail(f"host {_show(host)} is too long ({len(host)} characters)")
        encoded = _idna_to_ascii(host)
        if encoded is None:
            raise _fail(f"host {_show(host)} is not a valid internationalized name")
        host = encoded
    if len(host) > _MAX_HOST_CHARS or not _ASCII_HOST.fullmatch(host):
        raise _fail(f"host {_show(host)} is not a valid host name")
    return host


@functools.lru_cache(maxsize=4096)
def _idna_to_ascii(host: str) -> str | None:
    """The IDNA encoding of the non-ASCII ``host`` (see :func:`_ascii_host`), or
    ``None`` if neither IDNA 2008 nor IDNA 2003 can encode it. Cached, refusals
    too: one encoding costs about 45 us, and the links of a page name few hosts."""
    try:
        return idna.encode(host, uts46=True, transitional=False).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        try:
            return host.encode("idna").decode("ascii").lower()
        except UnicodeError:
            return None


def _port(parts: SplitResult, url: str) -> int | None:
    """The port of ``parts`` (``None`` if absent); raises ``UrlError`` if not 1-65535.

    The error names the whole port part, everything after the host's ``:``
    (``'9000:80'`` for ``http://h:9000:80/``).
    """
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is None:
        return None
    if not 1 <= port <= 65535:
        hostport = parts.netloc.rpartition("@")[2]
        if hostport.startswith("["):
            raw = hostport.partition("]")[2].removeprefix(":")
        else:
            raw = hostport.partition(":")[2]
        raise _fail(f"bad port {_show(raw)} in {_show(url)} (expected 1-65535)")
    return port


#: RFC 3986 Appendix B: scheme, authority (``None`` without ``//``), path and query
#: (``None`` without ``?``) of a URL; a fragment is matched and ignored.
_PARTS = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#.*)?",
                    re.DOTALL)  # fmt: skip


def _split(url: str, shown: str) -> tuple[str, str, int | None, str, str]:
    """``(scheme, host, port, path, query)`` of the http(s) URL ``url``, which has
    no whitespace to strip (``shown`` is the link as found, for error messages).

    The scheme and the host come back lowercase, an IPv6 host with its brackets,
    the userinfo dropped, ``port`` ``None`` when absent or empty (RFC 3986 §3.2.3),
    ``query`` ``""`` when absent. One regular expression (RFC 3986 Appendix B),
    about six times faster than ``urlsplit`` plus its ``hostname`` and ``port``.

    Raises:
        UnsupportedScheme: the scheme is not http/https.
        UrlError: no scheme, no host, a bracket outside an IPv6 literal or one not
            closed, or a port that is not a number in 1-65535.
    """
    match = _PARTS.fullmatch(url)
    if match is None:
        raise _fail(f"{_show(shown)} has no scheme (a relative URL without a base)")
    scheme, authority, path, query = match.groups()
    scheme = scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise _fail(
            f"unsupported scheme {scheme!r} in {_show(shown)} (only http and https are crawled)",
            scheme=True,
        )
    hostport = (authority or "").rpartition("@")[2]
    if hostport[:1] == "[":
        host, close, rest = hostport.partition("]")
        if not close or rest[:1] not in ("", ":"):
            raise _fail(f"cannot parse {_show(shown)}: an IPv6 literal needs '[...]' alone")
        host += "]"
        port_text = rest[1:] if rest else None
    else:
        if "[" in hostport or "]" in hostport:
            raise _fail(f"cannot parse {_show(shown)}: '[' or ']' outside an IPv6 literal")
        host, colon, port_text = hostport.partition(":")
        if not colon:
            port_text = None
    if not host:
        raise _fail(f"{_show(shown)} has no host")
    port: int | None = None
    if port_text:
        digits = port_text.lstrip("0")
        if not (port_text.isascii() and port_text.isdigit() and len(digits) <= 5):
            port = -1
        else:
            port = int(digits or "0")
        if not 1 <= port <= 65535:
            raise _fail(f"bad port {_show(port_text)} in {_show(shown)} (expected 1-65535)")
    return scheme, host.lower(), port, path, query or ""


def clean(url: str, base: str | None = None) -> str:
    """The URL to request for the link ``url`` found on a page whose base is ``base``.

    The steps, in the order of the WHATWG URL basic URL parser (§4.4), each one on
    text the earlier steps have finished, so that a later step never exposes work
    for an earlier one and ``clean(clean(u)) == clean(u)`` holds by construction:

    1. surrounding C0 controls and spaces are stripped from the whole link (its
       fragment included), tab and newlines removed everywhere and backslashes in
       the authority or path read as ``/``; the base gets the same (§4.4);
    2. ``url`` is resolved against ``base`` (RFC 3986 §5.2, see ``_join``);
    3. the fragment is dropped (RFC 3986 §3.5: it is never sent). Spaces or
       controls now at the end were inside the link and stay: they are encoded in
       step 6, as browsers do, so ``/public/.. #x`` is ``/public/..%20``, not
       ``/public/..`` (which a server resolves to ``/``);
    4. the userinfo (``user:pw@``) is dropped: a crawler never sends credentials
       found in a link, and with them one site would be crawled twice;
    5. the host: IDNA-encoded first (UTS #46, see ``_ascii_host``: code points it
       maps to nothing, such as U+00AD or U+FEFF, vanish), then a host that ends in
       a number is read as IPv4 and written as a dotted quad (WHATWG URL §3.5 host
       parser: "domain to ASCII", then "ends in a number", then the IPv4 parser), an
       IPv6 literal is written in its RFC 5952 form; the port is written as its
       decimal number (an explicit default port is kept);
    6. the path and the query are percent-encoded as UTF-8 (``_PATH_SAFE``,
       ``_QUERY_SAFE``; existing escapes are kept, ``%`` itself is never encoded);
    7. dot segments are removed from the encoded path (RFC 3986 §5.2.4, also for
       absolute URLs, with ``%2e`` read as a dot as browsers do), because clients
       and servers remove them: the URL requested, the URL robots.txt is checked on
       and the dedupe key must name the same path. Encoding never makes or unmakes a
       dot segment (``.`` and ``%`` are never encoded), so the order of 6 and 7 is
       free; removing dot segments leaves only text that step 6 would not change.

    Nothing else is rewritten: other escapes and the query order stay as found.

    Args:
        url: an absolute or relative URL reference, as written in a page.
        base: the absolute URL it is relative to, or ``None`` for an absolute ``url``.

    Returns:
        An absolute http/https URL string, ASCII only, without a fragment, whose path
        has no dot segment in any spelling and whose host, if it ends in a number,
        is a dotted-quad IPv4 address.

    Raises:
        UnsupportedScheme: (a ``UrlError``) the scheme is not http/https, e.g.
            ``javascript:``, ``mailto:``, ``data:``; the message names the scheme.
        UrlError: one line saying why: no scheme (relative without a base), no host,
            a bad host name (an IPvFuture literal such as ``[v1.x]`` or an IPv6 zone
            id included), a port that is not a number in 1-65535, or text that cannot
            be parsed (a lone surrogate included).
    """
    raw = _fix_whitespace(url)
    if base and not raw.startswith(("http://", "https://")):
        joined = _join(_fix_whitespace(base), raw)
    else:
        joined = raw
    joined = joined.partition("#")[0]
    if _takes_fast_path(joined):
        return joined
    return _clean_slowly(joined, url)


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _join(base: str, ref: str) -> str:
    """``ref`` resolved against the absolute ``base`` (RFC 3986 §5.2.2, §5.2.3), the
    fragment kept; dot segments are left for :func:`clean` to remove (with ``%2e``
    read as a dot, as browsers do), so every kind of reference is treated alike.

    A reference naming the base's own scheme without ``//`` (``http:g``,
    ``http:/g``) is relative, as in browsers (WHATWG URL, special schemes) and
    ``urljoin``; a ``;`` is part of the path (no RFC 2396 params). The base's own
    dot segments are removed before a relative path is merged with it, as a browser
    parses the base URL first: ``g`` against ``http://h/a/..`` is ``http://h/g``
    (so the result never depends on how the base is spelled). A ``base`` without a
    scheme resolves nothing: ``ref`` comes back as it is (and :func:`clean` refuses
    it unless it is absolute). Never raises.
    """
    base_scheme = _SCHEME.match(base)
    if base_scheme is None:
        return ref
    if ref[:1] != "/":
        scheme = _SCHEME.match(ref)
        if scheme is not None:
            name = scheme.group()[:-1].lower()
            rest = ref[scheme.end() :]
            if base_scheme.group().lower() != name + ":" or rest.startswith("//"):
                return ref  # absolute (another scheme is refused by clean)
            ref = rest
    if ref[:1] == "/":
        if ref[:2] == "//":
            return base_scheme.group() + ref
        return _prefix(base) + ref
    prefix = _prefix(base)
    tail = base[len(prefix) :].partition("#")[0]
    path = tail.partition("?")[0]
    if not ref or ref[0] == "#":
        return prefix + tail + ref
    if ref[0] == "?":
        return prefix + path + ref
    if not path:
        return prefix + "/" + ref
    path = _remove_dot_segments(path)
    return prefix + path[: path.rfind("/") + 1] + ref


def _takes_fast_path(joined: str) -> bool:
    """Whether :func:`clean` returns the resolved, fragment-free ``joined`` as it is.

    True when ``_ALREADY_CLEAN`` matches, the host and port are in range and no path
    segment is a dot segment; :func:`_clean_slowly` would return such a URL unchanged.
    """
    match = _ALREADY_CLEAN.fullmatch(joined)
    if match is None:
        return False
    host = match.group("host")
    if (
        (host[-1] in _DIGIT_OR_DOT or "0x" in host)
        and not _CANONICAL_IPV4.fullmatch(host)
        and _ends_in_number(host)
    ):
        return False  # 127.1, 2130706433, 0x7f.0.0.1, 127.0.0.1.: the general path
    port = match.group("port")
    return (
        len(match.group("host")) <= _MAX_HOST_CHARS
        and (port is None or int(port) <= 65535)
        and _DOT_SEGMENT.search(joined, match.end("host")) is None
    )


def _ends_in_number(host: str) -> bool:
    """WHATWG URL "ends in a number": the last label (a final empty one dropped) is all
    ASCII digits or ``0x`` and hex digits; such a host is parsed as IPv4."""
    labels = host.split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()
    last = labels[-1]
    if last.isascii() and last.isdigit():
        return True
    return last[:2] in ("0x", "0X") and all(c in _HEX for c in last[2:])


def _ipv4_host(host: str) -> str | None:
    """The dotted-quad form of a host that names an IPv4 address the way browsers read
    it, or ``None`` for a host that does not end in a number (a name).

    WHATWG URL §3.5 "IPv4 parser": one to four dot-separated numbers, each decimal,
    ``0x`` hex or ``0``-prefixed octal, the last filling the remaining bytes; a final
    dot is dropped. ``127.1``, ``2130706433``, ``0x7f.0.0.1``, ``0177.0.0.1`` and
    ``127.0.0.1.`` are all ``127.0.0.1``. So a link cannot slip a special-purpose
    address past the address policy by spelling it oddly, and one address has one URL.

    Raises:
        UrlError: the host ends in a number but is not a valid IPv4 address.
    """
    if not _ends_in_number(host):
        return None
    labels = host.split(".")
    if labels[-1] == "":
        labels.pop()
    numbers: list[int] = []
    for label in labels:
        if label[:2] in ("0x", "0X") and all(c in _HEX for c in label[2:]):
            numbers.append(int(label[2:] or "0", 16))
        elif label.isascii() and label.isdigit() and label:
            octal = len(label) > 1 and label[0] == "0"
            if octal and not all(c in "01234567" for c in label):
                raise _fail(f"host {_show(host)} is not a valid IPv4 address")
            numbers.append(int(label, 8 if octal else 10))
        else:
            raise _fail(f"host {_show(host)} is not a valid IPv4 address")
    if len(numbers) > 4 or any(n > 255 for n in numbers[:-1]):
        raise _fail(f"host {_show(host)} is not a valid IPv4 address")
    if numbers[-1] >= 256 ** (5 - len(numbers)):
        raise _fail(f"host {_show(host)} is not a valid IPv4 address")
    value = numbers[-1]
    for i, n in enumerate(numbers[:-1]):
        value += n * 256 ** (3 - i)
    return str(ipaddress.IPv4Address(value))


def _clean_slowly(joined: str, url: str) -> str:
    """:func:`clean` of the resolved, fragment-free ``joined`` (``url`` as found).

    The general path, steps 4-7 of :func:`clean`: ``_split`` finds the parts, each
    part is validated and written in its final form, and the URL is assembled from
    them (nothing is parsed twice). :func:`clean` skips it for URLs that
    ``_ALREADY_CLEAN`` shows it would return unchanged (tests check that both paths
    agree).
    """
    scheme, host, port, path, query = _split(joined, url)
    if host[0] == "[":
        host = f"[{_ipv6_host(host[1:-1])}]"
    else:
        ascii_host = _ascii_host(host)
        host = _ipv4_host(ascii_host) or ascii_host
    try:
        path = quote(path, safe=_PATH_SAFE)
        query = quote(query, safe=_QUERY_SAFE)
    except UnicodeError as exc:
        raise _fail(f"cannot parse {_show(url)}: {exc}") from None
    path = _remove_dot_segments(path)
    authority = host if port is None else f"{host}:{port}"
    if query:
        return f"{scheme}://{authority}{path or '/'}?{query}"
    return f"{scheme}://{authority}{path}"


def _ipv6_host(hostname: str) -> str:
    """The RFC 5952 text of the bracketed host ``hostname`` (brackets removed).

    Raises:
        UrlError: an RFC 3986 IPvFuture literal (``v1.x``), an IPv4 address in
            brackets, a zone id (``fe80::1%25eth0``: browsers refuse them, WHATWG URL
            §3.5 IPv6 parser) or text that is not an IPv6 address.
    """
    if hostname.startswith("v") or ":" not in hostname:
        # an RFC 3986 IPvFuture "[v1.x]", an IPv4 "[1.2.3.4]", a name "[a]" or "[]"
        kind = "an IPvFuture literal (not supported)" if hostname[:1] == "v" else "not IPv6"
        raise _fail(f"host {_show(f'[{hostname}]')} is {kind}")
    if "%" in hostname:
        raise _fail(f"host {_show(f'[{hostname}]')} has a zone id (not supported)")
    try:
        return ipaddress.IPv6Address(hostname).compressed
    except ValueError:
        raise _fail(f"host {_show(hostname)} is not a valid IPv6 address") from None


def _fix_escape(match: re.Match[str]) -> str:
    """One percent-escape in normal form (RFC 3986 §6.2.2.1, §6.2.2.2)."""
    unreserved, lowercase = match.groups()
    if unreserved is not None:
        return chr(int(unreserved, 16))
    if lowercase is not None:
        return "%" + lowercase.upper()
    return "%25"


def _fix_escapes(text: str) -> str:
    """``text`` with unreserved escapes decoded, others uppercased, lone ``%`` escaped."""
    if "%" not in text:
        return text
    return _PCT.sub(_fix_escape, text)


def _remove_dot_segments(path: str) -> str:
    """``path`` (starting with ``/``) without ``.``/``..`` segments (RFC 3986 §5.2.4).

    A dot may be escaped (``%2e``, ``.%2E``), as the WHATWG URL standard reads
    single- and double-dot segments, so ``/a/%2e%2e/b`` is ``/b``.
    """
    if ("/." not in path and "/%2" not in path) or not _DOT_SEGMENT.search(path):
        return path
    segments = path.split("/")
    out: list[str] = []
    for segment in segments[1:-1]:
        lowered = segment.lower() if "%" in segment else segment
        if lowered in _DOUBLE_DOT:
            if out:
                out.pop()
        elif lowered not in _SINGLE_DOT:
            out.append(segment)
    last = segments[-1]
    lowered = last.lower() if "%" in last else last
    if lowered in _DOUBLE_DOT:
        if out:
            out.pop()
        out.append("")
    elif lowered in _SINGLE_DOT:
        out.append("")
    else:
        out.append(last)
    return "/" + "/".join(out)


class _StripList:
    """The strip list as a matcher of lowercase names: exact names, and prefixes for
    the names that end in ``*`` (``utm_*`` matches every ``utm_...`` name). Empty when
    there is nothing to strip (``bool`` is ``False``)."""

    __slots__ = ("_names", "_prefixes")

    def __init__(self, names: Collection[str]) -> None:
        lowered = [name.lower() for name in names]
        self._names = frozenset(name for name in lowered if not name.endswith("*"))
        self._prefixes = tuple(name[:-1] for name in lowered if name.endswith("*"))

    def __contains__(self, name: object) -> bool:
        return name in self._names or (
            isinstance(name, str) and bool(self._prefixes) and name.startswith(self._prefixes)
        )

    def __bool__(self) -> bool:
        return bool(self._names or self._prefixes)


@functools.lru_cache(maxsize=16)
def _lowered(names: tuple[str, ...] | frozenset[str]) -> _StripList:
    """The strip list as a matcher (cached per hashable list)."""
    return _StripList(names)


def _strip_set(strip_params: Collection[str]) -> _StripList:
    if isinstance(strip_params, tuple | frozenset):
        return _lowered(strip_params)
    return _StripList(strip_params)


_NOTHING = _StripList(())


def _strip_path_params(path: str, strip: _StripList) -> str:
    """``path`` without its ``;name=value`` parameters whose lowercased name is in
    ``strip`` (see :func:`normalize`); other ``;`` pieces stay in their order."""
    segments = path.split("/")
    for i, segment in enumerate(segments):
        if ";" in segment:
            head, *params = segment.split(";")
            kept = [p for p in params if "=" not in p or p.partition("=")[0].lower() not in strip]
            if len(kept) != len(params):
                segments[i] = ";".join([head, *kept])
    return "/".join(segments)


def _query_key(piece: str) -> tuple[str, str]:
    name, _, value = piece.partition("=")
    return name, value


def normalize(url: str, strip_params: Collection[str]) -> str:
    """The dedupe key of the *cleaned* URL ``url`` (see :func:`clean`).

    Normal form (RFC 3986 §6.2.2 syntax-based and §6.2.3 scheme-based normalization):
    scheme and host lowercase (§6.2.2.1), a host's trailing dot dropped, the scheme's
    default port removed (80 for http, 443 for https; §6.2.3), percent-escapes of
    unreserved characters decoded and all others uppercase (§6.2.2.1-§6.2.2.2; a
    ``%`` that starts no escape becomes ``%25``), dot segments removed (§6.2.2.3,
    after decoding, so ``%2E%2E`` counts), an empty path written ``/`` (§6.2.3), the
    fragment and the userinfo dropped (as by :func:`clean`). In the query, empty ``&``
    pieces are dropped, parameters whose lowercased name is in ``strip_params`` are
    removed, the rest are sorted by name then value (stable) and kept byte for byte
    otherwise (blank values included); an empty query loses its ``?``.

    In the path, a ``;name=value`` parameter of any segment (RFC 3986 §3.3 allows
    ``;`` for them, and session ids travel there: ``/a;jsessionid=0A1B/b``,
    ``/shop;sid=XYZ``) whose lowercased name is in ``strip_params`` is removed with
    its ``;``, after escapes are fixed and before dot segments are removed (so
    ``/a/..;sid=1/b`` is ``/b``, as servers that drop path parameters read it); any
    other ``;`` text stays (``/a;v=2``, ``/a;b``, ``/a;sid``). So a site that mints a
    fresh session id into every link is crawled once. :func:`clean` keeps them: the
    server may need its session id on the wire.

    ``normalize(normalize(u, s), s) == normalize(u, s)`` for every cleaned ``u``.

    Args:
        url: a URL returned by :func:`clean`.
        strip_params: query and path parameter names to remove, matched
            case-insensitively (e.g. ``CrawlConfig.strip_params``); a name ending in
            ``*`` is a prefix (``utm_*`` matches ``utm_reader``).

    Returns:
        The normalized absolute URL string.

    Raises:
        UnsupportedScheme: ``url`` is not an absolute http/https URL.
        UrlError: ``url`` has no host or a bad port, or cannot be parsed.
    """
    match = _ALREADY_NORMAL.fullmatch(url)
    if match is not None and _DOT_SEGMENT.search(url, match.start(3)) is None:
        port = match.group(2)
        if port is None or (int(port) != DEFAULT_PORTS[match.group(1)] and int(port) <= 65535):
            if ";" not in url:
                return url
            # Only path parameters to strip (and dot segments they hid, "..;sid=1").
            path = match.group(3)
            strip = _strip_set(strip_params)
            stripped = _strip_path_params(path, strip) if strip else path
            if stripped == path:
                return url
            return url[: match.start(3)] + _remove_dot_segments(stripped)
    return _normalize_slowly(url, strip_params)


def _normalize_slowly(url: str, strip_params: Collection[str]) -> str:
    """:func:`normalize` by the general path (tests check both paths agree)."""
    scheme_match = _SCHEME.match(url)
    if scheme_match is None or scheme_match.group()[:-1].lower() not in DEFAULT_PORTS:
        raise _fail(f"{_show(url)} is not an absolute http or https URL", scheme=True)
    scheme, host, port, path, query = _split(url, url)
    host = host.rstrip(".") or host
    netloc = host if port is None or port == DEFAULT_PORTS[scheme] else f"{host}:{port}"

    path = _fix_escapes(path) if path else "/"
    strip = _strip_set(strip_params) if query or ";" in path else _NOTHING
    if strip and ";" in path:
        path = _strip_path_params(path, strip)
    path = _remove_dot_segments(path)

    if query:
        pieces = [piece for piece in _fix_escapes(query).split("&") if piece]
        if pieces:
            if strip:
                pieces = [p for p in pieces if p.partition("=")[0].lower() not in strip]
            if len(pieces) > 1:
                pieces.sort(key=_query_key)
        query = "&".join(pieces)
    return f"{scheme}://{netloc}{path}?{query}" if query else f"{scheme}://{netloc}{path}"


def host_key(url: str) -> str:
    """The host identity of ``url`` that politeness and per-host caps are keyed on.

    The host lowercase and IDNA-encoded, without a trailing dot, IPv6 literals in
    brackets, followed by ``:port`` only when the port is not the scheme's default
    (docs/architecture.md, "Host key"): ``example.com``, ``127.0.5.1:8080``,
    ``[::1]:8080``. ``http://a/`` and ``https://a/`` share the key ``a``.

    Args:
        url: an absolute http/https URL (normally one returned by :func:`clean`).

    Raises:
        UrlError: ``url`` has no host, a bad port or a host that cannot be encoded.
    """
    match = _SIMPLE_AUTHORITY.match(url)
    if match is not None:
        scheme, host, port_text = match.groups()
        host = host.rstrip(".") or host
        if port_text is None:
            return host
        number = int(port_text)
        if 1 <= number <= 65535:
            return host if number == DEFAULT_PORTS[scheme] else f"{host}:{number}"
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise _fail(f"cannot parse {_show(url)}: {exc}") from None
    host = parts.hostname
    if not host:
        raise _fail(f"{_show(url)} has no host")
    port = _port(parts, url)
    if ":" in host:
        host = f"[{host}]"
    else:
        if not host.isascii():
            host = _ascii_host(host)
        host = host.rstrip(".") or host
    if port is None or port == DEFAULT_PORTS.get(parts.scheme.lower()):
        return host
    return f"{host}:{port}"


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``: the unit robots.txt applies to (RFC 9309 §2.3).

    The host part is :func:`host_key` (default ports omitted), so
    ``origin("HTTPS://Example.com:443/a?b") == "https://example.com"``.

    Raises:
        UnsupportedScheme: the scheme is not http/https.
        UrlError: as :func:`host_key`.
    """
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError as exc:
        raise _fail(f"cannot parse {_show(url)}: {exc}") from None
    if scheme not in DEFAULT_PORTS:
        raise _fail(f"{_show(url)} is not an absolute http or https URL", scheme=True)
    return f"{scheme}://{host_key(url)}"


def origin_prefix(base: str) -> str:
    """The part of an absolute URL before its path, as written: ``scheme://authority``.

    ``origin_prefix("http://a.test:8080/x/y?q") == "http://a.test:8080"``. A
    root-relative href (``/p``) resolves against ``base`` to the same URL as against
    ``origin_prefix(base) + "/"`` (RFC 3986 §5.2.2: only the base's scheme and
    authority are used), so ``origin_prefix(base) + href`` can stand for it as a memo
    key. WHATWG's whitespace and backslash fixes are applied first, as :func:`clean`
    does. A string without ``://`` comes back unchanged. Never raises.
    """
    return _prefix(_fix_whitespace(base))


def _prefix(base: str) -> str:
    """:func:`origin_prefix` of a base whose whitespace is already fixed."""
    start = base.find("://")
    if start < 0:
        return base
    end = len(base)
    for mark in "/?#":
        at = base.find(mark, start + 3)
        if 0 <= at < end:
            end = at
    return base[:end]


@functools.lru_cache(maxsize=4096)
def registered_domain(host: str) -> str:
    """The registered domain ("eTLD+1") of ``host`` by the Public Suffix List.

    The PSL comes from tldextract's bundled snapshot and is never fetched; private
    suffixes count, so ``a.github.io`` is its own registered domain. Rules (PSL
    "Algorithm", https://publicsuffix.org/list/): the longest matching suffix plus
    one label (``www.bbc.co.uk`` -> ``bbc.co.uk``); a name that is itself a public
    suffix is its own registered domain (``co.uk``); a name under no listed suffix
    takes the default rule ``*`` (``a.b.localweb.test`` -> ``localweb.test``). An IP
    address or a single-label name (``localhost``) is its own registered domain.

    Args:
        host: a host name without port (lowercase or not, ASCII or Unicode, with or
            without a trailing dot) or an IP address (IPv6 with or without brackets).

    Returns:
        The registered domain, lowercase ASCII (Unicode names are IDNA-encoded).

    Raises:
        UrlError: ``host`` is empty or not a valid host name.
    """
    name = host.strip().lower().rstrip(".")
    if not name:
        raise _fail(f"empty host {_show(host)}")
    if ":" in name or name.startswith("["):
        return name
    name = _ascii_host(name)
    if "." not in name:
        return name
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        pass
    else:
        return name
    result = _EXTRACT(name)
    if result.suffix:
        return f"{result.domain}.{result.suffix}" if result.domain else name
    return ".".join(name.rsplit(".", 2)[-2:])


__all__ = [
    "DEFAULT_PORTS",
    "clean",
    "host_key",
    "normalize",
    "origin",
    "origin_prefix",
    "registered_domain",
]
