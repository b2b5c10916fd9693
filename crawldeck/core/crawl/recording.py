"""Recording: what a response becomes in the crawl's results.

A page fetched (or given up on) becomes its ``pages`` row, its edges in ``links`` and
the frontier rows of the URLs it found (admitted through ``core.policy.admission``, placed by
the frontier window: in memory or spilled); a 3xx ``Location`` or a meta refresh is
judged as the next hop of its redirect chain (``core.net.redirects.judge_hop``). The rows
go to the store in one operation per page (``Store.record_page``), so a kill leaves
either the whole page or none of it.

What a page row says of its content (issue #13): ``title``, ``etag``,
``last_modified``, ``content_length`` from the response; its WARC record's place and
payload digest, and ``duplicate_of`` for an exact duplicate (``core.storage.archive``,
``core.storage.warc``); ``canonical_url``, the ``<link rel="canonical">`` resolved against the
page's base and cleaned like a link, and admitted like one (scope, traps, robots.txt
at its fetch); ``simhash`` and ``near_duplicate_of``, an earlier HTML page of the same
host within Hamming distance 3 (``core.policy.simhash.NearDuplicates``, Manku, Jain and Das
Sarma, WWW 2007). Each archived page also gets its ``metadata`` record (referrer and
outlinks) and, when rendered, its DOM as a ``conversion`` record.

Under the ``opic`` ordering (``core.policy.prioritizer``) a fetched page hands its cash on: all
of it to its redirect's target, else an equal share to each distinct outlink; a new URL
starts with its share, a URL already queued gets it added (in memory,
``FrontierWindow.credit``, and in the store, so a resume has it: ``Store.add_scores``
in SQLite, ``ClusterStore.add_scores`` in Redis for a worker of a cluster crawl).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Literal

from crawldeck.core.config import CrawlConfig
from crawldeck.core.crawl.observer import HostStats, Observer
from crawldeck.core.crawl.snapshot import ResponseRow
from crawldeck.core.errors import FetchError, UrlError
from crawldeck.core.net import redirects
from crawldeck.core.policy import urls
from crawldeck.core.policy.admission import Admission, Link, url_reason
from crawldeck.core.policy.frontier_entry import FrontierEntry
from crawldeck.core.policy.links import Extracted, robots_tags
from crawldeck.core.policy.prioritizer import (
    PRIORITY_LINK,
    PRIORITY_SEED,
    SEED_CASH,
    Prioritizer,
)
from crawldeck.core.policy.seen import SeenSet
from crawldeck.core.policy.simhash import NearDuplicates
from crawldeck.core.policy.traps import Verdict
from crawldeck.core.policy.window import FrontierWindow
from crawldeck.core.protocols import LocalHistory, ResultSink, StoreRoles
from crawldeck.core.records import PARTIAL_ERROR, FetchResult, FrontierRow, PageRecord
from crawldeck.core.render_types import RenderResult
from crawldeck.core.storage.archive import ArchivedResult, PageArchive
from crawldeck.core.words import plural

#: One DEBUG line a URL done (``-v``, ``--log-level DEBUG``), as Scrapy's "Crawled (200)".
log = logging.getLogger("crawldeck.engine.recording")

#: HTTP statuses that carry a Location to follow (RFC 9110 §15.4).
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class Recorder:
    """Turns responses and failures into the store's rows and the frontier's URLs.

    Args:
        config: ``max_body_bytes``, ``max_redirects``, ``strip_params``.
        store: the results (``record_page``, ``fail_urls``).
        observer: host figures and page counters; refusals are recorded there.
        admission: the seen set and the trap guards for the URLs a page finds.
        frontier: where admitted URLs wait (in memory or spilled).
        seen: the seen set (told when the rows of its keys went to the store).
        wake: called when a URL was queued in memory (a worker may take it).
        archive: the WARC records written after a page's fetch (``None``: WARC off).
        near: the near-duplicate index of the crawl (per host; filled on resume).
        prioritizer: the crawl's ordering (default ``bfs``): under ``opic`` the cash a
            page hands on to its links, and their priorities.
        roles: the store's optional roles (``CrawlStore.roles``): its ``cash`` sink
            gets the credits; with a ``scores`` keeper (SQLite) only those of URLs not
            in memory (the window writes the others' when they leave memory), without
            one (a cluster's Redis) every credit, its entries standing for the URLs
            held in memory too. ``None``: no role (no credits are written).
    """

    def __init__(
        self,
        config: CrawlConfig,
        store: ResultSink,
        observer: Observer,
        admission: Admission,
        frontier: FrontierWindow,
        seen: SeenSet,
        wake: Callable[[], None],
        archive: PageArchive | None = None,
        near: NearDuplicates | None = None,
        prioritizer: Prioritizer | None = None,
        roles: StoreRoles | None = None,
    ) -> None:
        self._prioritizer = prioritizer or Prioritizer()
        self._archive = archive
        self._near = near if near is not None else NearDuplicates()
        self._config = config
        self._store = store
        roles = roles or StoreRoles()
        self._add_scores = None if roles.cash is None else roles.cash.add_scores
        self._through = roles.scores is None
        self._obs = observer
        self._admission = admission
        self._frontier = frontier
        self._seen = seen
        self._wake = wake

    def queue(
        self,
        link: Link,
        depth: int,
        priority: int,
        redirects: tuple[str, ...] = (),
        via: str | None = None,
        *,
        spill: bool = True,
        cookies: tuple[tuple[str, str], ...] = (),
        score: float = 0.0,
        inlinks: int = 1,
        ranked: bool = True,
    ) -> FrontierRow:
        """Queue an admitted ``link`` found at ``depth``: in memory, or spilled to
        SQLite past the frontier window (``FrontierWindow.place``; ``spill=False`` keeps
        it in memory: a redirect hop carries its chain's cookies, which SQLite does not
        keep; so its row keeps the chain, ``redirects``, only if it set no cookie: a
        resumed chain that had cookies goes on without its memory, which would call the
        cookie gate's redirect a loop without them). A URL of a parked host is written
        as ``queued`` for the next run and not kept in memory. ``priority``:
        ``PRIORITY_SEED`` or ``PRIORITY_LINK``; under a cash ordering, unless ``ranked``
        is false (a seed, a redirect target taking its source's place), its cash,
        ``score``, and ``inlinks`` give it instead (``Prioritizer.priority``: a URL no
        page has linked to yet, from a sitemap, has the lowest).

        Returns:
            its frontier row, for the caller to persist.
        """
        host = link.host
        prioritizer = self._prioritizer
        if ranked and prioritizer.by_cash:
            priority = prioritizer.priority(score, inlinks)
        stats = self._obs.hosts.get(host)
        if stats is None:
            stats = self._obs.stats(host, link.origin)
        elif not stats.fetched and not _same_origin(link.url, stats.origin):
            self._obs.stats(host, link.origin)  # its origin may still change (http/https)
        if stats.parked:
            state = "queued"  # for the next run; nothing more is fetched from it now
        elif not self._frontier.place(host, spill=spill):
            state = "spilled"  # it waits in SQLite only (``FrontierWindow``)
            priority = self._frontier.spill_priority(host, priority)
        else:
            self._frontier.add(
                FrontierEntry(link.url, link.key, host, depth, priority, 0, redirects, via,
                              cookies, score=score, inlinks=inlinks)
            )  # fmt: skip
            self._wake()
            state = "queued"
        return FrontierRow(
            key=link.key,
            url=link.url,
            host=host,
            depth=depth,
            priority=priority,
            state=state,
            available_at=0.0,
            attempts=0,
            redirects=redirects if not cookies else (),
            via=via,
            score=score,
            inlinks=inlinks,
        )

    def queue_seed(self, link: Link) -> FrontierRow:
        """Queue an admitted seed ``link`` (depth 0, ``PRIORITY_SEED`` under every
        ordering, ``SEED_CASH`` under a cash ordering); its frontier row, for the
        caller to persist."""
        cash = SEED_CASH if self._prioritizer.by_cash else 0.0
        return self.queue(link, 0, PRIORITY_SEED, score=cash, ranked=False)

    def failure(
        self, entry: FrontierEntry, stats: HostStats, start: float, now: float, exc: FetchError
    ) -> None:
        """Record a fetch that produced no HTTP response after its last try."""
        self._obs.pages += 1
        stats.fetched += 1
        page = PageRecord(
            url=entry.url,
            final_url=entry.url,
            host=entry.host,
            depth=entry.depth,
            status=None,
            content_type="",
            bytes=0,
            elapsed_ms=round((now - start) * 1000, 3),  # to the µs, as a fetch's
            fetched_at=start,
            rendered=False,
            error=f"{exc.reason}: {exc}",
            noindex=False,
        )
        stats.remember(ResponseRow(start, entry.url, None, page.elapsed_ms, page.error))
        self._store.record_page(page, key=entry.key, links=(), new_rows=(), state="failed")
        if log.isEnabledFor(logging.DEBUG):
            log.debug("failed %s after %.0f ms: %s", entry.url, page.elapsed_ms, page.error)

    async def response(
        self,
        entry: FrontierEntry,
        stats: HostStats,
        result: FetchResult,
        start: float,
        *,
        failed: bool,
        extracted: Extracted | None = None,
        rendered: RenderResult | None = None,
        parse_error: str | None = None,
    ) -> None:
        """Record a response: the page, its redirect (a 3xx ``Location`` or a meta
        refresh) or links (raw, then those of the rendered DOM when the page was
        rendered), and the new frontier rows.

        A redirect hop to another spelling of the same URL (same dedupe key) goes on
        as the same frontier row (state ``queued`` with the next hop's URL), so a kill
        resumes the chain; a chain that ends in a loop, past ``max_redirects`` or as a
        growing-URL trap marks its hops failed with the reason (``core.net.redirects``).

        Awaits the response record's WARC location first, then the seen set's exact
        checks (in a thread, ``Admission.follow``); nothing is awaited between the
        admission of a redirect's next hop and the page's rows, queued to the store in
        one operation (else that hop, fetched meanwhile, could fail this chain's URLs
        and the page's ``done`` would then overwrite it).

        Raises:
            StoreError: the store failed (its exact check or an earlier write), or the
                WARC writer did.
        """
        if isinstance(result, ArchivedResult) and result.archived is not None:
            await result.archived  # PageArchive.page below then does not wait
        self._obs.pages += 1  # its bytes were counted as it was answered (Engine._visit)
        stats.fetched += 1
        status = result.status
        if status >= 500:
            stats.errors += 1
        error: str | None = None
        if result.truncated:
            error = f"{PARTIAL_ERROR}: over {self._config.max_body_bytes} bytes"
        elif failed:
            error = f"gave up after {plural(entry.attempts + 1, 'try', 'tries')}"
        elif parse_error is not None:
            error = parse_error
        elif extracted is not None and extracted.cut is not None:
            error = extracted.cut  # parse_max_bytes or max_links_per_page
        edges: list[tuple[str, str]] = []
        texts: dict[str, str] = {}  # anchor text by link target
        new_rows: list[FrontierRow] = []
        final_url = entry.url
        noindex = False
        hop: str | None = None  # where the response redirects to (raw), if anywhere
        base = entry.url
        location = result.headers.get("location")
        canonical_url: str | None = None
        if extracted is None:
            # not parsed (not HTML, a PDF; an error status; a redirect; a parse given
            # up): X-Robots-Tag applies to any response type (Google's robots meta tag
            # specification), so its noindex is recorded all the same
            tags = robots_tags(result.headers, self._config.robots_token)
            noindex = "noindex" in tags or "none" in tags
        if status in REDIRECT_STATUSES and location:
            hop = location
        elif extracted is not None:
            noindex = extracted.noindex
            hrefs = extracted.links
            canonical_url = _canonical(extracted)
            follow = not (extracted.nofollow and self._config.obey_nofollow)
            if canonical_url is not None and follow:
                hrefs = [*hrefs, canonical_url]  # admitted like a link
            admitted: list[Link] = []
            targets: list[Link] | None = [] if self._prioritizer.by_cash else None
            await self._follow(
                entry, hrefs, extracted.base, edges, admitted, targets, extracted.anchors, texts
            )
            if rendered is not None:
                noindex = noindex or rendered.noindex
                await self._follow(entry, rendered.links, rendered.base, edges, admitted, targets)
                await self._follow(entry, rendered.navigations, entry.url, edges, admitted, targets)
            new_rows += self._queue_links(entry, admitted, targets)
            if extracted.refresh is not None:
                hop, base = extracted.refresh, extracted.base
        # a 3xx that leads nowhere is a broken link, as wget's "Redirection (302) without
        # location" (issue #25 trial 20: it was recorded as a plain 302, not broken)
        nowhere = status in REDIRECT_STATUSES and not (location or "").strip()
        if nowhere and error is None:
            error = f"redirect_no_location: HTTP {status} with no Location to follow"
        state: Literal["done", "failed", "queued"] = "failed" if failed or nowhere else "done"
        following: FrontierEntry | None = None
        if hop is not None:
            target, ended, following = await self._redirect(entry, hop, base, result, new_rows)
            if target is not None:
                final_url = target
                edges.append((entry.url, target))
            if ended is not None:
                error = f"{ended.reason}: {ended.detail}"
                state = "failed"
                self._store.fail_urls(
                    [(urls.normalize(u, self._config.strip_params), u) for u in entry.redirects],
                    error,
                )
            elif following is not None:
                state = "queued"
        ref = result.warc
        near_of: str | None = None
        fp = extracted.simhash if extracted is not None else None
        if rendered is not None and rendered.simhash is not None:
            fp = rendered.simhash  # what a reader sees: a JavaScript shell's text is not
        if fp is not None:
            near_of = self._near.find(entry.host, fp, entry.url)
            self._near.add(entry.host, fp, entry.url)
        if self._archive is not None:
            ref = await self._archive.page(
                result, via=entry.via, outlinks=[to for _, to in edges], rendered=rendered
            )
            if (
                ref is not None
                and canonical_url is not None
                and urls.host_key(canonical_url) == entry.host
                and urls.normalize(canonical_url, self._config.strip_params) != entry.key
            ):
                self._archive.canonical(ref, entry.url, canonical_url)
        page = PageRecord(
            url=entry.url,
            final_url=final_url,
            host=entry.host,
            depth=entry.depth,
            status=status,
            content_type=result.content_type,
            bytes=len(result.body),
            elapsed_ms=result.elapsed_ms,
            fetched_at=start,
            rendered=rendered is not None and (rendered.error is None or rendered.timed_out),
            error=error,
            noindex=noindex,
            warc_file=ref.file if ref is not None else None,
            warc_offset=ref.offset if ref is not None else None,
            warc_length=ref.length if ref is not None else None,
            payload_digest=ref.payload_digest if ref is not None else None,
            title=extracted.title if extracted is not None else None,
            etag=result.headers.get("etag"),
            last_modified=result.headers.get("last-modified"),
            content_length=_content_length(result),
            canonical_url=canonical_url,
            duplicate_of=ref.duplicate_of if ref is not None else None,
            simhash=fp,
            near_duplicate_of=near_of,
        )
        stats.remember(ResponseRow(start, entry.url, status, result.elapsed_ms, error))
        self._store.record_page(
            page,
            key=entry.key,
            links=list(dict.fromkeys(edges)),
            new_rows=new_rows,
            state=state,
            next_url=following.url if following is not None else None,
            next_host=following.host if following is not None else None,
            redirects=following.redirects
            if following is not None and not following.cookies
            else (),
            anchors=texts,
        )
        self._seen.handed_over()
        if log.isEnabledFor(logging.DEBUG):
            # a body not read is no empty page (issue #25 trial 19: "0 bytes")
            size = "body not read (not HTML)" if result.skipped else f"{page.bytes} bytes"
            log.debug(
                "crawled (%s) %s: %s in %.0f ms, %d links%s",
                status, entry.url, size, page.elapsed_ms, len(edges),
                f", {error}" if error else "",
            )  # fmt: skip
        if following is not None:
            self._frontier.push_front(following)

    async def _redirect(
        self,
        entry: FrontierEntry,
        raw: str,
        base: str,
        result: FetchResult,
        new_rows: list[FrontierRow],
    ) -> tuple[str | None, Verdict | None, FrontierEntry | None]:
        """Judge the redirect of ``entry`` to ``raw`` (resolved against ``base``) as the
        next hop of its chain (``core.net.redirects.judge_hop``).

        Returns:
            ``(target, ended, following)``: ``target`` the cleaned URL (``None`` when
            it cannot be crawled: blocked as ``bad_url``/``scheme``); ``ended`` the
            ``Verdict`` that ends the chain (also recorded in ``blocked``), or
            ``None``; ``following`` the next hop when it goes on as this same frontier
            row (another spelling of this URL, or a URL of the chain asked again with a
            new cookie), else ``None`` (a new URL is admitted through the seen set and
            the trap guards at this depth with the highest priority, its row appended
            to ``new_rows``).
        """
        try:
            target = urls.clean(raw, base)
        except UrlError as exc:
            self._obs.block(raw, entry.host, Verdict(url_reason(exc), str(exc)))
            return None, None, None
        host = urls.host_key(target)
        set_by_hop = redirects.set_cookies(entry.url, result.headers.getall("set-cookie", ()))
        ended = redirects.judge_hop(
            entry.redirects,
            entry.url,
            target,
            set_cookie=bool(set_by_hop),
            max_redirects=self._config.max_redirects,
        )
        if ended is not None:
            self._obs.block(target, host, ended)
            return target, ended, None
        strip = self._config.strip_params
        key = urls.normalize(target, strip)
        chain = (*entry.redirects, entry.url)
        cookies = entry.cookies + set_by_hop
        if key == entry.key or any(urls.normalize(u, strip) == key for u in entry.redirects):
            following = FrontierEntry(
                target, entry.key, entry.host, entry.depth, entry.priority, 0, chain,
                entry.url, cookies, score=entry.score, inlinks=entry.inlinks,
            )  # fmt: skip
            following.host = host  # another host only for a chain URL asked again
            return target, None, following
        link = self._admission.link(target, key=key, host=host)
        if await self._admission.admit_found(link, entry.depth) is True:
            # it takes its source's place: under bfs a seed's priority (a redirect goes
            # first), under a cash ordering its source's priority, cash and in-links
            by_cash = self._prioritizer.by_cash
            new_rows.append(
                self.queue(link, entry.depth, entry.priority if by_cash else PRIORITY_SEED,
                           chain, entry.url, spill=False, cookies=cookies, score=entry.score,
                           inlinks=entry.inlinks, ranked=False)
            )  # fmt: skip
        elif entry.score:  # known already: all the cash goes to it (OPIC)
            self._credit([(key, entry.score, host)])
        return target, None, None

    async def _follow(
        self,
        entry: FrontierEntry,
        hrefs: list[str],
        base: str,
        edges: list[tuple[str, str]],
        admitted: list[Link],
        targets: list[Link] | None,
        anchors: Mapping[str, str] | None = None,
        texts: dict[str, str] | None = None,
    ) -> None:
        """Resolve and admit the outlinks of a page at ``entry.depth + 1``
        (``Admission.follow``); its edges go to ``edges``, the links admitted to
        ``admitted`` (queued by ``_queue_links`` once all of the page's are known),
        under ``opic`` the ``Link`` of each edge to ``targets``, and the anchor text of
        each edge's href (``anchors``) to ``texts`` by its URL."""
        found, fresh = await self._admission.follow(
            entry.url, entry.host, hrefs, base, entry.depth + 1, targets=targets,
            anchors=anchors, texts=texts,
        )  # fmt: skip
        edges += found
        admitted += fresh

    def _queue_links(
        self, entry: FrontierEntry, admitted: list[Link], targets: list[Link] | None
    ) -> list[FrontierRow]:
        """Queue the links ``admitted`` from the page of ``entry`` (at ``entry.depth +
        1``); under ``opic`` (``targets``: the ``Link`` of each edge) each distinct
        outlink (by dedupe key) gets an equal share of the page's cash
        (``Prioritizer.share``): a new URL starts with it, a known one gets it added
        and one more in-link (``_credit``; a page without cash, a sitemap URL, still
        counts as an in-link). Returns the new frontier rows."""
        depth = entry.depth + 1
        if targets is None:
            return [self.queue(link, depth, PRIORITY_LINK, (), entry.url) for link in admitted]
        keys = {link.key: link.host for link in targets}
        share = self._prioritizer.share(entry.score, len(keys))
        rows = [
            self.queue(link, depth, PRIORITY_LINK, (), entry.url, score=share) for link in admitted
        ]
        for link in admitted:
            keys.pop(link.key, None)
        self._credit([(key, share, host) for key, host in keys.items()])
        return rows

    def _credit(self, scores: list[tuple[str, float, str]]) -> None:
        """Add each ``(key, cash, host)``'s cash and one in-link to the URL ``key`` of
        ``host`` if it waits (a cash ordering): in memory (``FrontierWindow.credit``)
        and in the store (``CashSink.add_scores``): in SQLite for a URL not in memory
        whose host has URLs spilled there (the window writes the others' when they
        leave memory; a URL of a host with none spilled is fetched, in flight or of a
        parked host, and gets nothing, as a fetched one gets nothing in SQLite), or in a
        cluster's queues in Redis, every credit, where the URL moves up to its band."""
        missed: list[tuple[str, float]]
        if self._through:
            self._frontier.credit_all(scores)
            missed = [(key, cash) for key, cash, _ in scores]
        else:
            missed = self._frontier.credit_all(scores)
        if self._add_scores is not None and missed:
            self._add_scores(missed)


def _same_origin(url: str, origin: str) -> bool:
    """Whether the cleaned ``url`` has the origin ``origin`` (``urls.origin``'s form):
    it starts with ``origin`` and then its path (a cleaned URL's path starts with
    ``/``). ``False`` may be wrong (``http://a:80/`` has the origin ``http://a``): the
    caller then computes the origin itself; ``True`` never is."""
    return url.startswith(origin) and url.startswith("/", len(origin))


def near_index(history: LocalHistory | None) -> NearDuplicates:
    """The near-duplicate index of a crawl: the SimHashes of the pages of its earlier
    runs (``LocalHistory.simhashes``), empty for a store without a history of its own
    (a cluster worker sees only its own pages' SimHashes).

    Raises:
        StoreError: the crawl file cannot be read.
    """
    near = NearDuplicates()
    if history is not None:
        for host, fp, url in history.simhashes():
            near.add(host, fp, url)
    return near


def _canonical(extracted: Extracted) -> str | None:
    """The page's ``<link rel="canonical">`` resolved against its base and cleaned
    (``core.policy.urls.clean``), ``None`` when it has none or it cannot be crawled."""
    if not extracted.canonical:
        return None
    try:
        return urls.clean(extracted.canonical, extracted.base)
    except UrlError:
        return None


def _content_length(result: FetchResult) -> int | None:
    """The response's ``Content-Length`` as an int (RFC 9110 §8.6: digits only),
    ``None`` when absent or not a number."""
    value = result.headers.get("content-length", "").strip()
    return int(value) if value.isascii() and value.isdigit() else None


__all__ = ["REDIRECT_STATUSES", "Recorder", "near_index"]
