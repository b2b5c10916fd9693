"""One URL waiting to be fetched: ``FrontierEntry`` (plain data, no I/O).

The entry is what the frontier (``core.policy.frontier``) queues, what the window spills to the
crawl file and reads back (``core.policy.window``), what a cluster worker pushes to Redis
(``core.cluster``), and what the engine, the retries and the recorder read and update
as the URL is fetched. Most of them need the entry, not the ``Frontier``, so it lives
apart from it. Its layout is the frontier's main cost per URL in memory (issue #15
item 2): the class docstring says how it stays at 96 bytes.
"""

from __future__ import annotations


class _History:
    """What a ``FrontierEntry`` keeps of its URL's tries and of the redirect chain that
    led to it, and the page it was found on: four fields that keep their defaults for
    nearly every queued URL (a link found on a page has had no try and no redirect),
    and ``via``, read once when the page is recorded. Such an entry holds its ``via``
    in the slot where a ``_History`` would be: five fields in one slot."""

    __slots__ = ("attempts", "cookies", "redirects", "spent_s", "via")

    def __init__(
        self,
        attempts: int,
        redirects: tuple[str, ...],
        cookies: tuple[tuple[str, str], ...],
        spent_s: float,
        via: str | None,
    ) -> None:
        self.attempts = attempts
        self.redirects = redirects
        self.cookies = cookies
        self.spent_s = spent_s
        self.via = via


class FrontierEntry:
    """One URL waiting to be fetched.

    Args (each also an attribute, readable and writable):
        url: the URL to request (``urls.clean``).
        key: its dedupe key (``urls.normalize``).
        host: its host key (``urls.host_key``), the politeness unit.
        depth: links followed from a seed (seed = 0).
        priority: front queue index, 0 = highest; out-of-range values are clamped
            to the nearest queue (under ``opic`` the frontier stores the clamped
            value, and raises it as the URL's cash grows).
        attempts: tries made so far, all runs (retries after 429/503/timeouts).
        redirects: the URLs requested in the redirect chain that led here (3xx
            Location or meta refresh), oldest first, exactly as sent.
        via: the URL of the page it was found on, or ``None`` for a seed.
        cookies: ``(url, Set-Cookie value)`` of each cookie the chain's responses set,
            oldest first: sent on within this chain only (``core.net.redirects``), never
            stored.
        spent_s: seconds its tries so far took, this run (a URL's total time is
            bounded, see ``Engine``).
        score: its OPIC cash (``core.policy.prioritizer``; ``0.0`` under other orderings):
            what it got from the pages linking to it so far, handed on when fetched.
        inlinks: how many fetched pages have linked to it so far (``1`` for a URL
            found by a link; a seed's or a sitemap URL's ``1`` too); ``Frontier.credit``
            counts one more per credit. Its priority under ``opic-inlinks``.

    Memory: each URL queued in memory is one entry, most of the frontier's cost per
    URL (``benchmarks/frontier_bench.py``; issue #15 item 2 bounds it). ``attempts``,
    ``redirects``, ``cookies`` and ``spent_s`` are properties over one ``_History``
    made when one of them first differs from its default (a try, a redirect); until
    then the slot holds ``via`` (a property too). So an entry has 8 slots: 96 bytes
    with its GC header (CPython's allocator rounds a 9th slot's 104 up to 112).
    Equality compares every field, as a dataclass's does; entries are not hashable.
    """

    __slots__ = ("_extra", "depth", "host", "inlinks", "key", "priority", "score", "url")

    def __init__(
        self,
        url: str,
        key: str,
        host: str,
        depth: int,
        priority: int,
        attempts: int = 0,
        redirects: tuple[str, ...] = (),
        via: str | None = None,
        cookies: tuple[tuple[str, str], ...] = (),
        spent_s: float = 0.0,
        score: float = 0.0,
        inlinks: int = 1,
    ) -> None:
        self.url = url
        self.key = key
        self.host = host
        self.depth = depth
        self.priority = priority
        self.score = score
        self.inlinks = inlinks
        self._extra: str | _History | None = (
            _History(attempts, redirects, cookies, spent_s, via)
            if attempts or redirects or cookies or spent_s
            else via
        )

    def _made(self) -> _History:
        """Its ``_History``, made now (with the defaults and its ``via``) if it has none."""
        extra = self._extra
        if type(extra) is _History:
            return extra
        history = _History(0, (), (), 0.0, extra)  # type: ignore[arg-type]
        self._extra = history
        return history

    @property
    def via(self) -> str | None:
        """The URL of the page it was found on, or ``None`` for a seed."""
        extra = self._extra
        return extra.via if type(extra) is _History else extra  # type: ignore[return-value]

    @via.setter
    def via(self, value: str | None) -> None:
        extra = self._extra
        if type(extra) is _History:
            extra.via = value
        else:
            self._extra = value

    @property
    def attempts(self) -> int:
        """Tries made so far, all runs."""
        extra = self._extra
        return extra.attempts if type(extra) is _History else 0

    @attempts.setter
    def attempts(self, value: int) -> None:
        self._made().attempts = value

    @property
    def redirects(self) -> tuple[str, ...]:
        """The URLs requested in the redirect chain that led here, oldest first."""
        extra = self._extra
        return extra.redirects if type(extra) is _History else ()

    @redirects.setter
    def redirects(self, value: tuple[str, ...]) -> None:
        self._made().redirects = value

    @property
    def cookies(self) -> tuple[tuple[str, str], ...]:
        """``(url, Set-Cookie value)`` of each cookie the chain set, oldest first."""
        extra = self._extra
        return extra.cookies if type(extra) is _History else ()

    @cookies.setter
    def cookies(self, value: tuple[tuple[str, str], ...]) -> None:
        self._made().cookies = value

    @property
    def spent_s(self) -> float:
        """Seconds its tries so far took, this run."""
        extra = self._extra
        return extra.spent_s if type(extra) is _History else 0.0

    @spent_s.setter
    def spent_s(self, value: float) -> None:
        self._made().spent_s = value

    def _fields(self) -> tuple[object, ...]:
        """Every field, in the order of the arguments."""
        return (
            self.url, self.key, self.host, self.depth, self.priority, self.attempts,
            self.redirects, self.via, self.cookies, self.spent_s, self.score, self.inlinks,
        )  # fmt: skip

    def __eq__(self, other: object) -> bool:
        """Same fields (``NotImplemented`` for another type)."""
        if not isinstance(other, FrontierEntry):
            return NotImplemented
        return self._fields() == other._fields()

    def __repr__(self) -> str:
        """``FrontierEntry(url=..., ...)`` with every field, as a dataclass's."""
        names = (
            "url", "key", "host", "depth", "priority", "attempts",
            "redirects", "via", "cookies", "spent_s", "score", "inlinks",
        )  # fmt: skip
        pairs = ", ".join(f"{n}={v!r}" for n, v in zip(names, self._fields(), strict=True))
        return f"FrontierEntry({pairs})"


__all__ = ["FrontierEntry"]
