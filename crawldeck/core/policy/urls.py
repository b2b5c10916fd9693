"""URL cleaning, normalization and host identity (pure: no I/O, no clock, no network).

Two spellings of every URL travel through crawldeck (docs/architecture.md, "Conventions"):

* the **URL requested** (:func:`clean`): the link as a browser reads it, parsed and
  resolved against its base by the WHATWG URL standard (with ``ada_url``, a
  conformant parser), fragment and userinfo removed, so a server that is picky about
  its own spelling sees the URL a browser would send, and robots.txt is checked on
  exactly the path that is sent;
* the **dedupe key** (:func:`normalize`): the same URL put in the normal form of
  RFC 3986 §6.2.2-§6.2.3 plus a sorted, filtered query, so trivially different
  spellings of one resource are crawled once.

:func:`host_key`, :func:`origin` and :func:`registered_domain` give the identities that
politeness, robots.txt and the crawl scope are keyed on.

Errors: every failure is a :class:`core.errors.UrlError` whose message is one line
that says why; a URL that is not http/https raises its subclass
:class:`core.errors.UnsupportedScheme`. Their ``reason`` (``"bad_url"``, ``"scheme"``)
is a :class:`core.policy.traps.BlockReason` value.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Collection
from urllib.parse import SplitResult, urlsplit

import ada_url
import idna

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

#: How much of the Public Suffix List file is read at a time (bytes).
_PSL_READ_BYTES = 64 * 1024


@functools.cache
def _public_suffix_rules() -> frozenset[str]:
    """The Public Suffix List's rules, ICANN and private sections alike, as one set of
    lowercase ASCII strings (``co.uk``, ``*.kawasaki.jp``, ``!city.kawasaki.jp``;
    Unicode rules in their IDNA form, ``xn--p1ai``): about 1.5 MiB, built at the first
    host name that needs it (an IP address or one label never does), never fetched.

    The list is the copy the ``publicsuffixlist`` package ships (``PSLFILE``), a
    package kept in step with https://publicsuffix.org/list/; it is read here rather
    than through that package's matcher, which takes the parent of a wildcard rule
    (``compute.amazonaws.com`` under ``*.compute.amazonaws.com``) for a public suffix
    where the list's algorithm does not. It replaced tldextract, whose import (with
    requests, urllib3, filelock and charset-normalizer: 3.8 MiB in the crawl) and
    trie of a dict per label (5.9 MiB more) cost a crawl 9.7 MiB.

    Raises:
        OSError: the package's list file cannot be read (a broken install).
    """
    from publicsuffixlist import PSLFILE  # only its file: the import stays out of crawls by IP

    rules: set[str] = set()
    with open(PSLFILE, encoding="utf-8") as psl:
        for line in psl:
            rule = line.split(None, 1)[0].lower() if line.strip() else ""
            if not rule or rule.startswith("//"):
                continue
            if not rule.isascii():
                mark = "!" if rule.startswith("!") else "*." if rule.startswith("*.") else ""
                encoded = _idna_to_ascii.__wrapped__(rule[len(mark) :])  # not cached: once
                if encoded is None:
                    continue  # no ASCII form: no host cleaned by this module can match it
                rule = mark + encoded
            rules.add(rule)
    return frozenset(rules)


def _public_suffix_labels(labels: list[str]) -> int:
    """How many of ``labels`` (a name split at dots, all ASCII and lowercase) form its
    public suffix, by the PSL's algorithm (https://publicsuffix.org/list/, "Formal
    algorithm"): a matching exception rule prevails (its suffix is the rule less its
    first label); else the matching rule with the most labels (``*`` matches any one
    label); else the default rule ``*``: one label."""
    rules = _public_suffix_rules()
    count = len(labels)
    for i in range(count):  # an exception prevails wherever it matches
        if "!" + ".".join(labels[i:]) in rules:
            return count - i - 1
    for i in range(count):  # the longest rule first
        rest = ".".join(labels[i + 1 :])
        if ".".join(labels[i:]) in rules or (rest and "*." + rest in rules):
            return count - i
    return 1


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
        if not close:
            raise _fail(f"cannot parse {_show(shown)}: the IPv6 literal's '[' is not closed")
        if rest[:1] not in ("", ":"):
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

    What a browser requests for that link: ``url`` is parsed against ``base`` by the
    WHATWG URL standard's basic URL parser (§4.4), with ada (``ada_url``, the
    conformant parser of Node.js), and the result is the URL's serialization
    (§4.5) without the parts that never go on the wire:

    * everything the standard does for a special scheme (http, https): leading and
      trailing C0 controls and spaces stripped, tab and newlines removed anywhere,
      ``\\`` read as ``/`` before the query, any number of slashes after
      ``http:`` (``http:////h/``), ``http:g`` relative to an http base, an authority
      with the query glued on (``http://h?a`` is ``http://h/?a``), an empty path
      written ``/``, an empty query kept (``?`` at the end), the path, query and
      userinfo percent-encode sets (§1.3; existing escapes kept, ``|`` and ``[``
      left in a path as browsers send them), ``.``/``..`` segments removed (``%2e``
      too), the scheme's default port dropped, the host IDNA-encoded (UTS #46,
      §3.5), percent-decoded, and read as IPv4 when it ends in a number
      (``http://0x7f.1/`` is ``http://127.0.0.1/``), IPv6 in its RFC 5952 form;
    * then the fragment is dropped (RFC 3986 §3.5: it is never sent) and the
      userinfo (``user:pw@``): a crawler never sends credentials found in a link,
      and with them one site would be crawled twice.

    Where a browser would request a URL a crawler cannot, crawldeck refuses it:
    a scheme other than http/https, port 0, or a host that no DNS name can be
    (characters other than letters, digits, ``-`` and ``_``, an empty label, a
    label over 63 or a name over 253 characters: ``http://a..b/``,
    ``http://!$&/``). ``clean(clean(u)) == clean(u)``.

    Nothing else is rewritten: the query order, escapes and parameters stay as
    found (crawldeck's own normalization is :func:`normalize`, the dedupe key).

    Args:
        url: an absolute or relative URL reference, as written in a page.
        base: the absolute URL it is relative to, or ``None`` for an absolute ``url``.

    Returns:
        An absolute http/https URL string, ASCII only, with a path that starts with
        ``/``, without a fragment or userinfo, whose host, if it ends in a number,
        is a dotted-quad IPv4 address.

    Raises:
        UnsupportedScheme: (a ``UrlError``) the scheme is not http/https, e.g.
            ``javascript:``, ``mailto:``, ``data:``, ``ftp:``; the message names it.
        UrlError: one line saying why: no scheme (relative without a base), no host,
            a bad host name (an IPvFuture literal such as ``[v1.x]`` or an IPv6 zone
            id included), a port that is not a number in 1-65535, or text that cannot
            be parsed (a lone surrogate included).
    """
    try:
        href = ada_url.join_url(base, url) if base else ada_url.normalize_url(url)
    except ValueError:
        raise _refusal(url, base) from None
    match = _HREF.fullmatch(href)
    if match is None:
        scheme = href.partition(":")[0]
        raise _fail(
            f"unsupported scheme {scheme!r} in {_show(url)} (only http and https are crawled)",
            scheme=True,
        )
    host = match.group(2)
    if host[0] != "[" and (len(host) > _MAX_HOST_CHARS or not _ASCII_HOST.fullmatch(host)):
        raise _fail(f"host {_show(host)} is not a valid host name")
    port = match.group(3)
    if port == "0":
        raise _fail(f"bad port '0' in {_show(url)} (expected 1-65535)")
    if match.start(2) == match.end(1) + 3 and match.end(4) == len(href):
        return href  # no userinfo, no fragment: the common case
    authority = host if port is None else f"{host}:{port}"
    return f"{match.group(1)}://{authority}{match.group(4)}"


#: An http(s) URL as the WHATWG URL serializer writes it (§4.5, ada's ``href``):
#: scheme (1), userinfo (its ``@`` and ``/`` are percent-encoded), host (2: a name,
#: a dotted quad or a bracketed IPv6 address), port (3: decimal, never the
#: default), path and query (4: the path always starts with ``/``; ``#`` is
#: percent-encoded in both), then the fragment.
_HREF = re.compile(r"(https?)://(?:[^@/]*@)?(\[[0-9a-f:.]+\]|[^:/]+)(?::([0-9]+))?(/[^#]*)(?:#.*)?")

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _refusal(url: str, base: str | None) -> UrlError:
    """Why the WHATWG URL parser refuses ``url`` (against ``base``), as a ``UrlError``.

    Runs only on a refusal, to name its cause in one line: it reads the authority
    the parser read (after its whitespace and backslash fixes and the slashes after
    the scheme, WHATWG URL §4.4) and says what is wrong with it.
    """
    try:
        url.encode()
    except UnicodeError:
        return _fail(f"cannot parse {_show(url)}: not valid Unicode (a lone surrogate)")
    text = _fix_whitespace(url)
    scheme = _SCHEME.match(text)
    if scheme is not None:
        name = scheme.group()[:-1].lower()
        if name not in DEFAULT_PORTS:
            return _fail(
                f"unsupported scheme {name!r} in {_show(url)} (only http and https are crawled)",
                scheme=True,
            )
        rest = text[scheme.end() :]
        if base and rest[:1] != "/" and base.lower().startswith(name + ":"):
            return _fail(f"cannot parse {_show(url)} against the base {_show(base)}")
    elif not base:
        return _fail(f"{_show(url)} has no scheme (a relative URL without a base)")
    elif not ada_url.check_url(base):
        return _fail(f"{_show(url)} has no scheme (and its base {_show(base)} is not a URL)")
    elif text[:2] == "//":
        rest = text
    else:
        return _fail(f"cannot parse {_show(url)} against the base {_show(base)}")
    authority = re.split(r"[/?#]", rest.lstrip("/"), maxsplit=1)[0]
    hostport = authority.rpartition("@")[2]
    if hostport[:1] == "[":
        host, close, after = hostport.partition("]")
        if not close:
            return _fail(f"cannot parse {_show(url)}: the IPv6 literal's '[' is not closed")
        if after[:1] not in ("", ":"):
            return _fail(f"cannot parse {_show(url)}: an IPv6 literal needs '[...]' alone")
        host += "]"
        port_text = after[1:]
    else:
        if "[" in hostport or "]" in hostport:
            return _fail(f"cannot parse {_show(url)}: '[' or ']' outside an IPv6 literal")
        host, _, port_text = hostport.partition(":")
    if not host:
        return _fail(f"{_show(url)} has no host")
    digits = port_text.lstrip("0")
    if port_text and not (
        port_text.isascii()
        and port_text.isdigit()
        and len(digits) <= 5
        and int(digits or 0) <= 65535
    ):
        return _fail(f"bad port {_show(port_text)} in {_show(url)} (expected 1-65535)")
    if host[0] == "[":
        inner = host[1:-1]
        if inner[:1] == "v":
            return _fail(f"host {_show(host)} is an IPvFuture literal (not supported)")
        if "%" in inner:
            return _fail(f"host {_show(host)} has a zone id (not supported)")
        return _fail(f"host {_show(host)} is not a valid IPv6 address")
    last = host.removesuffix(".").rpartition(".")[2]
    if last.isascii() and (last.isdigit() or last[:2].lower() == "0x"):
        return _fail(f"host {_show(host)} is not a valid IPv4 address")
    return _fail(f"host {_show(host)} is not a valid host name")


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
    otherwise (blank values included); an empty query loses its ``?``. In both, the
    characters a browser sends as they are but RFC 3986 does not allow (``[ ] \\ ^ `
    { | }``) are percent-encoded, so ``/a|b`` and ``/a%7Cb`` share one key.

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


#: The characters a browser sends unencoded in a path or a query (WHATWG URL §1.3) that
#: RFC 3986 (§3.3, §3.4) does not allow there.
_OUTSIDE_RFC3986 = re.compile(r"[\[\]\\^`{|}\"<> ]")


def _encode_outside_rfc3986(text: str) -> str:
    """``text`` with the characters of ``_OUTSIDE_RFC3986`` percent-encoded (uppercase),
    so the dedupe key stays a URI in RFC 3986 normal form (``/a|b`` is ``/a%7Cb``, the
    key of both spellings)."""
    if not _OUTSIDE_RFC3986.search(text):
        return text
    return _OUTSIDE_RFC3986.sub(lambda match: f"%{ord(match.group()):02X}", text)


def _normalize_slowly(url: str, strip_params: Collection[str]) -> str:
    """:func:`normalize` by the general path (tests check both paths agree)."""
    scheme_match = _SCHEME.match(url)
    if scheme_match is None or scheme_match.group()[:-1].lower() not in DEFAULT_PORTS:
        raise _fail(f"{_show(url)} is not an absolute http or https URL", scheme=True)
    scheme, host, port, path, query = _split(url, url)
    host = host.rstrip(".") or host
    netloc = host if port is None or port == DEFAULT_PORTS[scheme] else f"{host}:{port}"

    path = _fix_escapes(_encode_outside_rfc3986(path)) if path else "/"
    strip = _strip_set(strip_params) if query or ";" in path else _NOTHING
    if strip and ";" in path:
        path = _strip_path_params(path, strip)
    path = _remove_dot_segments(path)

    if query:
        pieces = [
            piece for piece in _fix_escapes(_encode_outside_rfc3986(query)).split("&") if piece
        ]
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

    The PSL is the copy the ``publicsuffixlist`` package ships, read once at the
    first host name that needs it, never fetched; private suffixes count, so
    ``a.github.io`` is its own registered domain. Rules (PSL
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
    labels = name.split(".")
    suffix = _public_suffix_labels(labels)
    return ".".join(labels[-suffix - 1 :]) if suffix < len(labels) else name


__all__ = [
    "DEFAULT_PORTS",
    "clean",
    "host_key",
    "normalize",
    "origin",
    "origin_prefix",
    "registered_domain",
]
