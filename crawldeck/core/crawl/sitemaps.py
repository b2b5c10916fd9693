"""Reading a host's sitemaps in the background, politely, within the protocol's caps.

When the robots.txt of an origin is known (``core.net.robots.RobotsCache`` calls
``SitemapReader.robots_known`` after its first fetch this run, status ``ok``,
``missing`` or ``redirect_limit``), the origin's sitemaps are read in a task of their
own, so no worker waits for them: the ``Sitemap:`` URLs of its robots.txt, or
``ORIGIN/sitemap.xml`` when it declares none (the protocol's "Informing search engine
crawlers"). Only origins inside the crawl's scope are read (a render sub-request's CDN
is not), and only sitemaps inside it: one a robots.txt names on a host outside it (a
cross-submit) gets a ``sitemaps`` row with its ``scope`` reason and no request. Each
file:

* is checked against robots.txt (its own origin's) and fetched through the side
  requests (``SideRequests.fetch``: the host gate, the per-IP limit, politeness learnt
  from its answer; the engine's fetcher, so whatever wraps it sees the request), at
  most ``sitemaps.MAX_BYTES`` decoded, within a page's time cap (``total_timeout_ms``);
  a redirect is followed up to ``max_redirects`` hops within its origin;
* is read streaming (``_Reading``): the 2xx body comes in decoded chunks of at most
  64 KiB (``fetch(on_body=...)``) and goes through a ``core.policy.sitemaps.SitemapStream``
  in thread jobs of ``PUMP_STEPS`` steps, its URLs queued ``ADMIT_BATCH`` at a time
  as they are parsed; at most ``PARSE_SLOTS`` (4) files are read at once in the
  whole crawl. Memory holds neither a file nor its entries, and a file cut by the
  time cap keeps the URLs read before the cut;
* lists URLs that must pass the location rule (``sitemaps.Location``; robots.txt
  grants its whole origin), then the same admission as a link (scope, trap guards, seen
  set: ``Admission.follow``) at depth ``SITEMAP_DEPTH`` from the host's root, queued as
  links; their ``lastmod``, ``changefreq``, ``priority`` go to ``sitemap_urls``;
* of an index, has its sitemaps read depth first, at most ``MAX_INDEX_DEPTH`` levels
  below the file robots.txt named, each once (a sitemap listed again, the index itself
  included, is a ``loop``), on the index's own origin only; at most
  ``MAX_FILES_PER_ORIGIN`` files per origin and run.

Every file read becomes a ``sitemaps`` row with its status and, when something was
refused or cut, its reasons (``reason: detail; ...``). While a urlset's URLs are queued
batch by batch, each batch's ``sitemap_urls`` rows go with a row without status; the
file's final row is written once its reading is done: an index's after the files it
lists, a urlset's after its last URLs are queued (before them, a stop that cancels the
reading in between, or a kill between two commits, would leave a file marked read
whose URLs were never queued). So a crawl
stopped or killed while reading a file reads it again on resume (a second request for
it), skipping the files already read (``Store.sitemaps_read``: any answer that is not a
5xx or 429) and the URLs already queued (the seen set). A host whose robots.txt a
resumed run would not fetch (nothing of it left queued) and whose sitemaps no earlier
run read gets its robots.txt checked at the start of the run (``resume``), which starts
its reading.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from crawldeck.core.crawl.observer import Observer
from crawldeck.core.crawl.recording import REDIRECT_STATUSES, Recorder
from crawldeck.core.crawl.side_requests import SideRequests
from crawldeck.core.errors import FetchError, UrlError
from crawldeck.core.net.robots import RobotsCache
from crawldeck.core.policy import urls
from crawldeck.core.policy.admission import Admission
from crawldeck.core.policy.prioritizer import PRIORITY_LINK
from crawldeck.core.policy.seen import SeenSet
from crawldeck.core.policy.sitemaps import (
    MAX_BYTES,
    Location,
    SitemapEntry,
    SitemapKind,
    SitemapStream,
)
from crawldeck.core.policy.traps import ScopePolicy
from crawldeck.core.protocols import Clock, ResultSink
from crawldeck.core.records import SitemapRecord, SitemapUrlRecord
from crawldeck.core.words import plural

#: The depth of a URL found in a sitemap: one below the host's root page (the root
#: links to the sitemap, as it would to a page listing every URL).
SITEMAP_DEPTH = 1
#: Levels of indexes below the file robots.txt names (index -> index -> urlset): the
#: protocol allows one (an index lists urlsets); a second is what some generators write
#: (an index of per-section indexes); deeper chains are refused as ``index_depth``.
MAX_INDEX_DEPTH = 2
#: Sitemap files read per origin and run (with 50 000 URLs each: 50 million URLs).
MAX_FILES_PER_ORIGIN = 1000
#: Sitemap files read at once in the whole crawl. A reading holds a few MiB at most (a
#: network chunk, a parse step, a batch of entries, what expat holds of one tag, the
#: MiB kept for the WARC record), so four cost little; a slot is held while the
#: host's politeness is waited for and a hostile file costs up to the time cap, so
#: four keep other hosts' sitemaps read meanwhile.
PARSE_SLOTS = 4
#: URLs admitted per step (the loop runs other tasks between steps); a reading takes
#: the entries parsed once this many wait, so it holds at most this many and what one
#: more parse step read (``sitemaps.STEP_BYTES``) parsed and not yet queued.
ADMIT_BATCH = 500
#: ``SitemapStream`` steps (16 KiB uncompressed each) parsed per thread job: a reading
#: cut (its time cap, a stop) leaves at most that much parsing running in the thread.
PUMP_STEPS = 64
#: The ``error`` of a sitemap's row while its URLs are being queued (no status yet: a
#: run stopped or killed then reads the file again on resume).
READING = "reading: cut before its end (read again on resume)"
#: Hosts whose robots.txt a resumed run checks at once to read their sitemaps.
RESUME_BATCH = 32


@dataclass(slots=True)
class _Origin:
    """One origin's reading this run: the files seen (a loop check), asked for,
    answered with a sitemap (``read``), read with errors (``flawed``: the first error's
    reason of each, ``malformed``), not read (``failed``: why, ``HTTP 404`` or an
    error's reason), and the URLs they queued."""

    seen: set[str] = field(default_factory=set)
    files: int = 0
    read: int = 0
    queued: int = 0
    flawed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Failed:
    """A sitemap not read: the HTTP status (``None`` without an answer) and why."""

    status: int | None
    error: str


class SitemapReader:
    """Reads the sitemaps of each origin once per run (see the module).

    Args:
        side: the side requests (fetches through the host gate).
        robots: the robots.txt cache (each sitemap URL is checked).
        admission: the seen set and trap guards for the URLs listed.
        recorder: queues admitted URLs (in memory or spilled).
        store: ``enqueue_urls`` for their rows, ``record_sitemap`` for the file's.
        seen: told when the admitted keys went to the store.
        scope: only origins inside it are read.
        observer: the Log tab gets a line per origin read.
        clock: the one time source (epoch s).
        wake: called when URLs were queued or a reading ended (workers look again).
        max_redirects: hops followed per sitemap URL (``CrawlConfig.max_redirects``).
        read_before: the sitemaps an earlier run read (``Store.sitemaps_read``, called
            once in a thread), or ``None`` (a cluster worker: the robots.txt fetch that
            starts a reading happens once per crawl, in Redis).
        unread: a page URL of each host whose sitemaps an earlier run did not get to
            (``Store.hosts_without_sitemaps``, called once in a thread by ``resume``),
            or ``None`` (sitemaps off, or a cluster worker).
    """

    def __init__(
        self,
        side: SideRequests,
        robots: RobotsCache,
        admission: Admission,
        recorder: Recorder,
        store: ResultSink,
        seen: SeenSet,
        scope: ScopePolicy,
        observer: Observer,
        clock: Clock,
        wake: Callable[[], None],
        *,
        max_redirects: int,
        read_before: Callable[[], set[str]] | None,
        unread: Callable[[], list[str]] | None = None,
    ) -> None:
        self._side = side
        self._robots = robots
        self._admission = admission
        self._recorder = recorder
        self._store = store
        self._seen = seen
        self._scope = scope
        self._obs = observer
        self._clock = clock
        self._wake = wake
        self._max_redirects = max_redirects
        self._read_before = read_before
        self._unread = unread
        self._known: asyncio.Task[set[str]] | None = None
        self._slots = asyncio.Semaphore(PARSE_SLOTS)
        self._started: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._going = asyncio.Event()  # cleared while the crawl is paused
        self._going.set()
        self.files = 0  # sitemap files read this run
        self.admitted = 0  # URLs they added to the frontier

    @property
    def busy(self) -> bool:
        """Whether a reading is under way (the crawl is not over while it is)."""
        return bool(self._tasks)

    def robots_known(self, origin: str, declared: tuple[str, ...]) -> None:
        """``origin``'s robots.txt was fetched and settled, naming ``declared``
        sitemaps: start reading them (or ``/sitemap.xml``) unless this run did, or the
        origin is outside the scope."""
        if origin in self._started:
            return
        self._started.add(origin)
        if not self._allows(origin + "/"):
            return
        task = asyncio.create_task(self._read_origin(origin, declared), name=f"sitemaps {origin}")
        self._tasks.add(task)
        task.add_done_callback(self._ended)

    def _allows(self, url: str) -> bool:
        """Whether the cleaned ``url`` is inside the crawl's scope (a request may go)."""
        try:
            return self._scope.allows(url)
        except UrlError:
            return False

    def pause(self) -> None:
        """The crawl is paused (``Engine.pause``): no sitemap or robots.txt request of a
        reading starts until ``go_on``; one under way finishes, as a page fetch does."""
        self._going.clear()

    def go_on(self) -> None:
        """The crawl is resumed (``Engine.resume``): the readings go on."""
        self._going.set()

    def resume(self) -> None:
        """At the start of a run: read the sitemaps of the hosts an earlier run had
        pages of but read no sitemap of (stopped or killed before; a host with nothing
        left queued gets no robots.txt fetch otherwise). Their robots.txt is checked
        (fetched if needed), which starts each reading (``robots_known``); the crawl is
        not over until those checks are done (``busy``)."""
        if self._unread is None:
            return
        task = asyncio.create_task(self._resume(self._unread), name="sitemaps resume")
        self._tasks.add(task)
        task.add_done_callback(self._ended)

    async def _resume(self, unread: Callable[[], list[str]]) -> None:
        origins = {urls.origin(url) for url in await asyncio.to_thread(unread)}
        pending = sorted(origins - self._started)
        for i in range(0, len(pending), RESUME_BATCH):
            batch = pending[i : i + RESUME_BATCH]
            await self._going.wait()
            await asyncio.gather(*(self._robots.check(o + "/") for o in batch))

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            self._obs.log(f"sitemaps: reading stopped: {exc}")
        self._wake()

    async def aclose(self) -> None:
        """Cancel the readings under way and wait for them (the run ends)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _before(self) -> set[str]:
        """The sitemaps an earlier run read (asked once, in a thread)."""
        if self._read_before is None:
            return set()
        if self._known is None:
            self._known = asyncio.create_task(asyncio.to_thread(self._read_before))
        return await asyncio.shield(self._known)

    async def _read_origin(self, origin: str, declared: tuple[str, ...]) -> None:
        state = _Origin()
        roots = declared or (f"{origin}/sitemap.xml",)
        for raw in roots:
            try:
                url = urls.clean(raw)
            except UrlError as exc:
                self._obs.log(f"sitemaps of {origin}: {raw[:100]!r} skipped: {exc}")
                continue
            if not self._allows(url):
                # a cross-submit to a host outside the crawl's scope: no request goes
                # there, as none goes to a link there (issue #25 trial 18: --scope host
                # still fetched robots.txt and the sitemap of a host never allowed)
                self._record(url, None, None, 0, f"scope: {self._scope.explain(url)}")
                state.failed.append("scope")
                continue
            granted = origin if declared else None
            await self._read(url, Location.of(url, granted), 0, state)
        # a missing /sitemap.xml of an origin that declares none is no news
        failed = state.failed if declared or state.read else []
        if state.read or failed:
            files = plural(state.read, "file") + " read"
            if state.flawed:  # as Scrapy logs each bad one (issue #25 trial 13)
                why = ", ".join(f"{reason} {n}" for reason, n in Counter(state.flawed).items())
                files += f" ({len(state.flawed)} with errors: {why})"
            line = f"sitemaps of {origin}: {files}, {plural(state.queued, 'URL')} queued"
            if failed:  # what was not read, as the sitemaps table says (issue #25 trial 8)
                why = ", ".join(f"{reason} {n}" for reason, n in Counter(failed).items())
                line += f"; {plural(len(failed), 'file')} not read ({why})"
            self._obs.log(line)

    async def _read(self, url: str, where: Location, level: int, state: _Origin) -> None:
        """Read the sitemap at ``url`` (then, for an index, its sitemaps) and record it."""
        state.seen.add(url)
        if url in await self._before():
            return
        if state.files >= MAX_FILES_PER_ORIGIN:
            self._record(url, None, None, 0, f"host_cap: over {MAX_FILES_PER_ORIGIN} files")
            return
        state.files += 1
        self.files += 1
        room = MAX_FILES_PER_ORIGIN - state.files  # the sitemaps an index may still add
        async with self._slots:
            reading = _Reading(self, url, where, level, room)
            fetched = await self._fetch(url, reading)
            if isinstance(fetched, _Failed):  # what came before a cut is kept
                state.failed.append(
                    f"HTTP {fetched.status}" if fetched.status is not None
                    else fetched.error.partition(":")[0]
                )  # fmt: skip
                await reading.end(cut=True)
                errors = [fetched.error, *reading.reasons()]
                state.queued += reading.queued
                count = reading.count
                self._record(url, fetched.status, reading.kind, count, _join(errors), reading.rows)
                return
            state.read += 1
            status = fetched
            await reading.end()
        errors = reading.reasons()
        if errors:
            state.flawed.append(errors[0].partition(":")[0])
        if reading.kind == "sitemapindex":
            errors += await self._index(reading, level, state)
            self._record(url, status, reading.kind, reading.count, _join(errors))
            return
        # the row after the URLs are queued: a reading cut in between is done again
        state.queued += reading.queued
        self._record(url, status, reading.kind, reading.count, _join(errors), reading.rows)

    async def _index(self, reading: _Reading, level: int, state: _Origin) -> list[str]:
        """Read the sitemaps an index lists (depth first); the reasons to record."""
        errors: list[str] = []
        loops = 0
        deeper = reading.deeper
        for child in reading.children:
            if child in state.seen:
                loops += 1
            else:
                granted = reading.where.granted
                await self._read(child, Location.of(child, granted), level + 1, state)
        if loops:
            errors.append(f"loop: {loops} sitemaps listed were read already")
        if deeper:
            errors.append(f"index_depth: {deeper} sitemaps past {MAX_INDEX_DEPTH} index levels")
        if reading.elsewhere:
            errors.append(f"location: {reading.elsewhere} sitemaps not on {reading.where.origin}")
        if reading.past_cap:
            errors.append(
                f"host_cap: {reading.past_cap} sitemaps past {MAX_FILES_PER_ORIGIN} files"
            )
        return errors

    async def _fetch(self, url: str, reading: _Reading) -> int | _Failed:
        """GET ``url`` (robots.txt first), following redirects within its origin, the
        body of its 2xx answer streamed to ``reading``.

        Returns:
            the status of the 2xx answer, else why not.
        """
        hops = 0
        while True:
            await self._going.wait()  # nothing is sent while the crawl is paused
            decision = await self._robots.check(url)
            if not decision.allowed:
                return _Failed(None, "robots: disallowed by robots.txt")
            reading.hop(url)
            try:
                result = await self._side.fetch(
                    url, max_bytes=MAX_BYTES + 1, on_body=reading.feed, going=self._going
                )
            except FetchError as exc:
                return _Failed(None, f"{exc.reason}: {exc}")
            status = result.status
            location = result.headers.get("location")
            if status in REDIRECT_STATUSES and location and hops < self._max_redirects:
                try:
                    target = urls.clean(location, url)
                except UrlError as exc:
                    return _Failed(status, f"redirect: to a bad URL: {exc}")
                if urls.origin(target) != urls.origin(url):
                    return _Failed(status, f"redirect: off the origin, to {target[:200]}")
                url, hops = target, hops + 1
                continue
            if not 200 <= status < 300:
                return _Failed(status, f"http: status {status}")
            return status

    def _locate(
        self, entries: list[SitemapEntry], where: Location, sitemap: str
    ) -> tuple[list[SitemapUrlRecord], int]:
        """The entries whose cleaned URL the location rule allows, as rows (first
        listing of a URL wins); how many it refused."""
        kept: dict[str, SitemapUrlRecord] = {}
        refused = 0
        for entry in entries:
            try:
                url = urls.clean(entry.loc)
            except UrlError:
                refused += 1
                continue
            if not where.allows(url):
                refused += 1
            elif url not in kept:
                kept[url] = SitemapUrlRecord(
                    url, sitemap, entry.lastmod, entry.changefreq, entry.priority
                )
        return list(kept.values()), refused

    def _record(
        self,
        url: str,
        status: int | None,
        kind: str | None,
        count: int,
        error: str | None,
        rows: Sequence[SitemapUrlRecord] = (),
    ) -> None:
        """Write the ``sitemaps`` row of ``url`` and the ``sitemap_urls`` ``rows``."""
        try:
            host = urls.host_key(url)
        except UrlError:
            host = ""
        self._store.record_sitemap(
            SitemapRecord(url, host, self._clock(), status, kind, count, error), rows
        )

    async def _admit(self, sitemap: str, origin: str, found: list[str]) -> int:
        """Admit the URLs ``found`` in ``sitemap`` like links, in steps; how many were
        queued."""
        queued = 0
        host = urls.host_key(origin + "/")
        for start in range(0, len(found), ADMIT_BATCH):
            hrefs = found[start : start + ADMIT_BATCH]
            _, links = await self._admission.follow(sitemap, host, hrefs, sitemap, SITEMAP_DEPTH)
            rows = [self._recorder.queue(link, SITEMAP_DEPTH, PRIORITY_LINK, (), sitemap)
                    for link in links]  # fmt: skip
            if rows:
                self._store.enqueue_urls(rows)
                self.admitted += len(rows)
                queued += len(rows)
            self._seen.handed_over()
            self._wake()
        return queued


class _Reading:
    """One sitemap file read as it arrives (``SitemapReader._read``).

    The body of its 2xx answer is handed to ``feed`` chunk by chunk (``fetch(on_body=
    ...)``) and goes through a ``SitemapStream`` in steps of ``PUMP_STEPS`` off the
    event loop; neither the file nor its entries are held. A urlset's (or text
    sitemap's) URLs are located, admitted and queued ``ADMIT_BATCH`` at a time as they
    are parsed, each batch's ``sitemap_urls`` rows written with a ``sitemaps`` row
    without status (``Store.sitemaps_read`` skips only rows with one: a file whose
    reading a stop or a kill cuts is read again on resume); the last batch's rows go
    with the file's final row. An index's sitemaps on its own site are kept (at most
    ``room``, the files its origin may still read) to be read after it.

    Args:
        reader: the reader (its admission, recorder, store).
        url: the sitemap's URL as listed (the name its rows carry).
        where: its location rule (``hop`` moves it to a redirect's target).
        level: index levels above it.
        room: sitemaps an index may still add for its origin.
    """

    def __init__(
        self, reader: SitemapReader, url: str, where: Location, level: int, room: int
    ) -> None:
        self._reader = reader
        self.url = url
        self.where = where
        self._given = where
        self._room = room
        self._deeper_than_allowed = level + 1 > MAX_INDEX_DEPTH
        self.stream = SitemapStream()
        self.received = 0  # decoded bytes received
        self.queued = 0
        self.refused = 0  # URLs outside the location rule
        self._kept: set[int] = set()  # the hash of each URL kept (listed twice: once)
        self.rows: list[SitemapUrlRecord] = []  # the last batch's, for the final row
        self.children: list[str] = []  # an index's sitemaps to read
        self.elsewhere = 0  # an index's sitemaps not on its site
        self.deeper = 0  # an index's sitemaps past MAX_INDEX_DEPTH
        self.past_cap = 0  # an index's sitemaps past MAX_FILES_PER_ORIGIN

    @property
    def kind(self) -> SitemapKind | None:
        """What the file is, once known (``SitemapStream.kind``)."""
        return self.stream.kind

    @property
    def count(self) -> int:
        """The ``urls`` of its row: the sitemaps an index lists, the distinct URLs a
        urlset lists that the location rule allows."""
        return self.stream.count if self.kind == "sitemapindex" else len(self._kept)

    def hop(self, url: str) -> None:
        """The next request is for ``url`` (a redirect's target): its location rule."""
        self.where = self._given if url == self.url else Location.of(url, self._given.granted)

    async def feed(self, chunk: bytes) -> bool:
        """The next decoded bytes of the body (a ``BodySink``); whether to read on."""
        self.received += len(chunk)
        over = self.received - MAX_BYTES
        stream = self.stream
        stream.feed(chunk[: len(chunk) - over] if over > 0 else chunk)
        while True:
            more = await asyncio.to_thread(stream.pump, ADMIT_BATCH, PUMP_STEPS)
            if more or stream.waiting >= ADMIT_BATCH:
                await self._use(stream.take(), final=False)
            if not more:
                return over <= 0 and not stream.done

    async def end(self, *, cut: bool = False) -> None:
        """The body ended, or was ``cut`` (a failed fetch) or cut at the cap: parse
        its end (a cut file has none to check), admit what is left."""
        if not cut and self.received <= MAX_BYTES:
            await asyncio.to_thread(self.stream.close)
        await self._use(self.stream.take(), final=True)

    def reasons(self) -> list[str]:
        """What was refused or cut in the file, ``reason: detail`` each."""
        errors: list[str] = []
        if self.received > MAX_BYTES:  # a Content-Encoding bomb, cut at the cap
            errors.append(f"too_large: over {MAX_BYTES} bytes decoded, the rest ignored")
        if self.stream.error is not None:
            errors.append(self.stream.error)
        if self.stream.skipped:
            errors.append(f"skipped: {self.stream.skipped} entries without a usable URL")
        if self.refused:
            where = self.where
            errors.append(f"location: {self.refused} URLs outside {where.origin}{where.directory}")
        return errors

    async def _use(self, entries: list[SitemapEntry], *, final: bool) -> None:
        """Queue the URLs of ``entries`` (a urlset's) or keep them (an index's)."""
        if self.kind == "sitemapindex":
            self._list(entries)
            return
        reader = self._reader
        kept, refused = reader._locate(entries, self.where, self.url)
        self.refused += refused
        fresh = [row for row in kept if hash(row.url) not in self._kept]
        self._kept.update(hash(row.url) for row in fresh)
        self.queued += await reader._admit(self.url, self.where.origin, [r.url for r in fresh])
        if final:
            self.rows = fresh
        elif fresh:
            reader._record(self.url, None, self.kind, self.count, READING, fresh)

    def _list(self, entries: list[SitemapEntry]) -> None:
        """Keep the sitemaps an index lists that may be read (see the class)."""
        for entry in entries:
            try:
                child = urls.clean(entry.loc)
            except UrlError:
                self.elsewhere += 1
                continue
            if not self.where.same_site(child):
                self.elsewhere += 1
            elif self._deeper_than_allowed:
                self.deeper += 1
            elif len(self.children) < self._room:
                self.children.append(child)
            else:
                self.past_cap += 1


def _join(errors: list[str]) -> str | None:
    return "; ".join(errors) if errors else None


__all__ = [
    "ADMIT_BATCH",
    "MAX_FILES_PER_ORIGIN",
    "MAX_INDEX_DEPTH",
    "PARSE_SLOTS",
    "PUMP_STEPS",
    "READING",
    "SITEMAP_DEPTH",
    "SitemapReader",
]
