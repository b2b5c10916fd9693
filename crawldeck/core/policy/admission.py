"""Admission: an href becomes one URL value, then passes the seen set and the trap guards.

    href --clean/normalize/host_key--> Link --seen set--> trap guards --> admitted
                                                |               |
                                           seen before      Verdict (recorded once
                                           (dropped)         in ``blocked``)

A ``Link`` computes the cleaned URL, its dedupe key and its host key once
(``core.policy.urls``; the origin on first use), and the same href on many pages (a site's
navigation, its footer) is resolved once: a bounded two-generation memo keeps what a
root-relative or absolute href resolved to, and once its URL is in the seen set a repeat
costs one dict lookup. What an admitted URL becomes (in memory or spilled, its frontier
row) is the caller's (``core.crawl.engine``, ``core.policy.window``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from crawldeck.core.errors import UrlError
from crawldeck.core.policy import urls
from crawldeck.core.policy.seen import SeenSet
from crawldeck.core.policy.traps import BlockReason, TrapGuard, Verdict

#: Entries per generation of the href memo (``_HrefMemo``): at most twice this many.
HREF_MEMO_SIZE = 32_768
#: URLs remembered as already recorded in ``blocked`` (bounded, oldest forgotten).
BLOCKED_MEMORY = 100_000

#: ``block(url, host, verdict)``: record a refused URL (``Observer.block``).
BlockSink = Callable[[str, str, Verdict], None]


class Link:
    """One URL as the crawl knows it, computed once.

    Attributes:
        url: the cleaned URL, as it is sent (``urls.clean``).
        key: its dedupe key (``urls.normalize`` with the crawl's ``strip_params``).
        host: its host key (``urls.host_key``).
        seen: it passed admission (or was seen before): a repeat is only an edge.
    """

    __slots__ = ("_origin", "host", "key", "seen", "url")

    def __init__(self, url: str, key: str, host: str) -> None:
        self.url = url
        self.key = key
        self.host = host
        self.seen = False
        self._origin: str | None = None

    @property
    def origin(self) -> str:
        """``scheme://host[:port]`` (RFC 9309 §2.3's unit), computed on first use."""
        if self._origin is None:
            self._origin = urls.origin(self.url)
        return self._origin


#: The second characters that make an href starting with "/" scheme-relative rather
#: than root-relative (WHATWG URL: "\\" is "/" in http(s), and tabs and line breaks are
#: removed before parsing): ``//x``, ``/\\x`` and ``/<tab>/x`` name a host. Such an href
#: is not memoised: its key would be an absolute href's (``origin + "/\\"`` is the
#: absolute ``https://a.test/\\``, a path), which resolves to something else.
_NOT_ROOT_RELATIVE = frozenset("/\\\t\n\r")


class _HrefMemo:
    """A bounded memo of resolved hrefs, keyed by ``origin_prefix(base) + href`` for a
    root-relative href (``_NOT_ROOT_RELATIVE``) and by the href itself for an absolute
    http(s) one (hrefs whose resolution does not depend on the page's path;
    ``Admission.follow`` computes the key). Two generations of at most ``size``
    entries each: when the young one is full it becomes the old one and the old one is
    dropped, and a hit in the old one moves back to the young one, so the hrefs that
    keep recurring (navigation) stay.

    Attributes:
        young: the young generation (``key -> Link``), read directly by the caller:
            a hit there, most repeats, is one dict lookup (``revive`` for a miss).
    """

    __slots__ = ("_old", "_size", "young")

    def __init__(self, size: int) -> None:
        self._size = size
        self.young: dict[str, Link] = {}
        self._old: dict[str, Link] = {}

    def __len__(self) -> int:
        """Entries held, both generations."""
        return len(self.young) + len(self._old)

    def revive(self, key: str) -> Link | None:
        """The remembered resolution of ``key`` that is not in ``young`` (moved back
        there from the old generation), or ``None``."""
        found = self._old.pop(key, None)
        if found is not None:
            self.put(key, found)
        return found

    def put(self, key: str, link: Link) -> None:
        """Remember ``link`` under ``key`` (``young`` may be a new dict afterwards)."""
        if len(self.young) >= self._size:
            self._old = self.young
            self.young = {}
        self.young[key] = link


def _prefix_host(prefix: str) -> tuple[str, str]:
    """``(prefix + "/", host key of prefix)``: a URL starting with the former has the
    latter as host key (a prefix no URL starts with when it has no valid host)."""
    try:
        return prefix + "/", urls.host_key(prefix + "/")
    except UrlError:
        return "\0", ""  # matches no URL


@dataclass(frozen=True, slots=True)
class AdmissionStatistics:
    """Admission at one moment (immutable, named fields).

    Attributes:
        admitted: URLs admitted, all runs; hosts: hosts with at least one.
        memo_entries: hrefs the memo holds (two generations of ``HREF_MEMO_SIZE``).
        blocked_remembered: refused keys remembered so as not to record them again.
        seen_added, bloom_hits, exact_checks, false_positives: the seen set's counters
            (``core.policy.seen.SeenSet``).
    """

    admitted: int
    hosts: int
    memo_entries: int
    blocked_remembered: int
    seen_added: int
    bloom_hits: int
    exact_checks: int
    false_positives: int


class Admission:
    """The seen set and the trap guards, for every URL the crawl finds.

    Args:
        strip_params: the parameters the dedupe key drops (``CrawlConfig.strip_params``).
        guard: the trap guards (``core.policy.traps.TrapGuard``).
        seen: the seen set of dedupe keys (``core.policy.seen.SeenSet``).
        block: records a refused URL (called once per URL while it is remembered:
            at most ``BLOCKED_MEMORY`` recent ones).
    """

    def __init__(
        self, strip_params: tuple[str, ...], guard: TrapGuard, seen: SeenSet, block: BlockSink
    ) -> None:
        self._strip = strip_params
        self._guard = guard
        self._seen = seen
        self._block = block
        self._memo = _HrefMemo(HREF_MEMO_SIZE)
        self._blocked: dict[str, None] = {}
        self.admitted: Counter[str] = Counter()  # URLs admitted per host, all runs

    def statistics(self) -> AdmissionStatistics:
        """Admission's figures now."""
        seen = self._seen
        return AdmissionStatistics(
            admitted=self.admitted.total(),
            hosts=len(self.admitted),
            memo_entries=len(self._memo),
            blocked_remembered=len(self._blocked),
            seen_added=seen.added,
            bloom_hits=seen.bloom_hits,
            exact_checks=seen.exact_checks,
            false_positives=seen.false_positives,
        )

    def link(self, url: str, *, key: str | None = None, host: str | None = None) -> Link:
        """The ``Link`` of the cleaned URL ``url`` (``key`` and ``host`` computed when
        ``None``).

        Raises:
            UrlError: ``url`` has no valid host.
        """
        if key is None:
            key = urls.normalize(url, self._strip)
        return Link(url, key, urls.host_key(url) if host is None else host)

    def admit(
        self, link: Link, depth: int, *, is_seed: bool = False, seen: bool | None = None
    ) -> Verdict | bool:
        """Pass ``link`` found at ``depth`` through the seen set and the trap guards;
        ``seen``: the seen set's answer, asked beforehand (``SeenSet.seen_among``), or
        ``None`` to ask it here (``SeenSet.contains``, its exact check on this thread:
        seeds before a crawl).

        Returns:
            ``True`` when admitted (its key is now in the seen set and its host's count
            is one more), ``False`` when it was seen before (dropped, whatever the
            guards would say now), or the ``Verdict`` that refuses it (recorded in
            ``blocked`` unless it was recently).

        Raises:
            StoreError: from the seen set's exact check.
        """
        if seen is None:
            seen = self._seen.contains(link.key)
        return self._guarded(link, depth, seen, is_seed=is_seed)

    async def admit_found(self, link: Link, depth: int) -> Verdict | bool:
        """``admit`` for a URL found during a crawl (a redirect's target): the seen
        set's exact check runs in a thread (``SeenSet.seen_among``).

        Raises:
            StoreError: from the seen set's exact check.
        """
        seen = await self._seen.seen_among((link.key,))
        return self._guarded(link, depth, link.key in seen, is_seed=False)

    def _guarded(
        self, link: Link, depth: int, seen: bool, *, is_seed: bool, found_on: str | None = None
    ) -> Verdict | bool:
        """``admit`` once the seen set answered ``seen`` (``found_on``: the page the link
        is on, for the guard's calendar walk); adds an admitted key to the seen set."""
        if seen:
            return False
        key = link.key
        host = link.host
        verdict = self._guard.admit(
            link.url, depth, self.admitted[host], is_seed=is_seed, key=key, found_on=found_on
        )
        if verdict is not None:
            self.block_once(link.url, host, verdict, key=key)
            return verdict
        self._seen.add(key)
        self.admitted[host] += 1
        return True

    async def follow(
        self,
        page_url: str,
        page_host: str,
        hrefs: Iterable[str],
        base: str,
        depth: int,
        *,
        targets: list[Link] | None = None,
        anchors: Mapping[str, str] | None = None,
        texts: dict[str, str] | None = None,
    ) -> tuple[list[tuple[str, str]], list[Link]]:
        """Resolve and admit the outlinks ``hrefs`` of ``page_url`` (base URL ``base``)
        at ``depth``: the seen set answers for all of them at once, its exact checks in
        one thread job (``SeenSet.seen_among``), then each passes the trap guards (as
        found on ``page_url``: ``TrapGuard.admit``'s calendar walk).
        ``targets``: the ``Link`` of each edge is appended to it, in edge order (its
        dedupe key with it: OPIC's cash goes to known URLs by key, ``core.crawl.recording``).
        ``anchors``: the anchor text of hrefs (``core.policy.links.Extracted.anchors``); the
        text of each edge's href goes to ``texts`` by the edge's URL (the first one of
        a URL that several hrefs give).

        Returns:
            ``(edges, admitted)``: an edge ``(page_url, url)`` per href that resolved,
            in order (a page linking one href twice: once); the links admitted now.

        Raises:
            StoreError: from the seen set's exact check.
        """
        edges: list[tuple[str, str]] = []
        found: list[Link | tuple[str, Verdict]] = []  # to admit, or (href, refusal)
        memo = self._memo
        young = memo.young
        prefix = urls.origin_prefix(base)
        same_host: tuple[str, str] | None = None  # (prefix + "/", its host key), on need
        for href in dict.fromkeys(hrefs):
            # the memo key (``_HrefMemo``) and its young generation's lookup written out:
            # a repeated href (most of a page's: navigation) costs no call
            memo_key: str | None
            if href.startswith("/"):
                # "//", "/\\" and "/" then a tab or a line break (which the URL parser
                # drops) are scheme-relative, not root-relative (WHATWG URL, "special
                # authority slashes"): resolved against the page, never the memo
                memo_key = None if href[1:2] in _NOT_ROOT_RELATIVE else prefix + href
            elif href.startswith(("http://", "https://")):
                memo_key = href
            else:
                memo_key = None
            known = None
            if memo_key is not None:
                known = young.get(memo_key)
                if known is None:
                    known = memo.revive(memo_key)
                    young = memo.young  # a put may have started a new generation
            if known is None:
                try:
                    url = urls.clean(href, base)
                except UrlError as exc:  # recorded in href order, with the guards' refusals
                    reason = url_reason(exc)
                    found.append((href, Verdict(reason, str(exc))))
                    if reason is BlockReason.BAD_URL:  # a broken link: its edge, as written
                        edges.append((page_url, href))
                        if anchors and texts is not None and href in anchors:
                            texts.setdefault(href, anchors[href])
                    continue
                if same_host is None:
                    same_host = _prefix_host(prefix)
                host = same_host[1] if url.startswith(same_host[0]) else urls.host_key(url)
                known = Link(url, urls.normalize(url, self._strip), host)
                if memo_key is not None:
                    memo.put(memo_key, known)
                    young = memo.young
            edges.append((page_url, known.url))
            if anchors:
                text = anchors.get(href)
                if text is not None and texts is not None:
                    texts.setdefault(known.url, text)
            if targets is not None:
                targets.append(known)
            if not known.seen:
                found.append(known)
        admitted: list[Link] = []
        if not found:
            return edges, admitted
        seen = await self._seen.seen_among([link.key for link in found if isinstance(link, Link)])
        for link in found:  # no await from here on: ``seen`` stays exact
            if not isinstance(link, Link):
                self.block_once(link[0], page_host, link[1], key=link[0])
                continue
            outcome = self._guarded(link, depth, link.key in seen, is_seed=False, found_on=page_url)
            if not isinstance(outcome, Verdict):
                link.seen = True
                if outcome:
                    seen.add(link.key)
                    admitted.append(link)
        return edges, admitted

    def block_once(self, url: str, host: str, verdict: Verdict, *, key: str | None = None) -> None:
        """Record ``url`` as refused by ``verdict`` unless it was recently (``key``: its
        dedupe key, computed when ``None``; an unparsable href is its own key)."""
        if key is None:
            key = urls.normalize(url, self._strip)
        if key in self._blocked:
            return
        self._blocked[key] = None
        if len(self._blocked) > BLOCKED_MEMORY:
            del self._blocked[next(iter(self._blocked))]
        self._block(url, host, verdict)


def url_reason(exc: UrlError) -> BlockReason:
    """The ``blocked`` reason of a URL ``clean`` refused: ``scheme`` for
    ``UnsupportedScheme`` (mailto:, javascript:), else ``bad_url``."""
    return BlockReason(exc.reason)


__all__ = [
    "BLOCKED_MEMORY",
    "HREF_MEMO_SIZE",
    "Admission",
    "AdmissionStatistics",
    "Link",
    "url_reason",
]
