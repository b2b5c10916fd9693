"""The prioritizer: which queued URL the frontier hands out first (issue #15, pure).

No I/O, no clock. The crawl's ``ordering`` (config key) chooses one of:

``bfs``
    Breadth-first, the order of discovery (Najork & Wiener, WWW 2001: breadth-first
    finds high-PageRank pages early). Three priorities: seeds and redirect targets
    (``PRIORITY_SEED``), links (``PRIORITY_LINK``), demoted hosts (the last one).
    Among ready hosts, the one that became ready first.

``opic``
    On-line Page Importance Computation (Abiteboul, Preda & Cobena, WWW 2003), used as
    a crawl order as in Baeza-Yates, Castillo, Marin & Rodriguez, "Crawling a country:
    better strategies than breadth-first for web page ordering" (WWW 2005). Every seed
    starts with ``SEED_CASH``; a fetched page splits its cash equally over its
    outlinks (every distinct one, URLs already queued included: their cash grows,
    ``Frontier.credit``), and the cash of a link the crawl cannot follow (out of scope,
    refused) is lost, as is that of a page without outlinks. A URL's cash only grows
    until it is fetched. The frontier takes the URL with the most cash first, within a
    factor of two: cash maps to one of ``front_queues`` priorities by its binary
    exponent (``cash_priority``), so a host's back queue is one FIFO per priority and a
    cash increase moves a URL up at most ``front_queues`` times. Among ready hosts, the
    host whose best queued URL has the highest priority. Online: no global
    recomputation, one division per fetched page and one addition per outlink.

``opic-inlinks`` (the default)
    OPIC's cash and the in-link count together: a queued URL's importance is
    ``cash * inlinks ** INLINK_POWER``, where ``inlinks`` counts the distinct fetched
    pages that linked to it so far (the backlink count of Cho, Garcia-Molina & Page,
    "Efficient crawling through URL ordering", WWW 1998), and its priority is that
    importance's band, a factor of ``4`` each (``importance_priority``). Cash and
    in-links move together as OPIC's cash does (a credit is one more linking page);
    the rest is as ``opic``. Why both: on a documentation web whose pages carry
    thousands of navigation links (rustdoc's), OPIC alone gives a page linked from
    every page crumbs of cash and fetches it late, behind breadth-first in the first
    5 % of the crawl; the in-link count finds such pages, and cash keeps the order of
    the rest (``benchmarks/ordering_bench.py``: RESULTS.md, "Crawl ordering").

``larger-sites-first``
    Baeza-Yates et al. (2005) and Castillo's thesis ("Effective web crawling", 2004,
    §4): among ready hosts, the host with the most pending URLs first (those queued in
    memory and those the frontier window spilled to SQLite, ``Frontier.set_beyond``;
    by binary order of magnitude: 9 and 15 tie, 16 beats them); within a host,
    breadth-first. Priorities as ``bfs``.

The order never makes a host faster: it only chooses among the hosts whose politeness
time has come (``Frontier.release``'s ``at``) and within a host's queue.

Shapes: cash is a ``float`` (no unit, the seeds' total is their number); a priority is
an ``int``, ``0`` the highest, ``priorities - 1`` the demoted one.
"""

from __future__ import annotations

from collections.abc import Callable
from math import frexp
from typing import Final, Literal, get_args

Ordering = Literal["bfs", "opic", "opic-inlinks", "larger-sites-first"]
#: The values of the ``ordering`` config key.
ORDERINGS: Final[tuple[str, ...]] = get_args(Ordering)
#: The ``ordering`` of a crawl that sets none: the one ``benchmarks/ordering_bench.py``
#: finds best (RESULTS.md, "Crawl ordering (issue #15)").
DEFAULT_ORDERING: Final[Ordering] = "opic-inlinks"
#: The orderings whose URLs carry OPIC cash (``Prioritizer.by_cash``).
CASH_ORDERINGS: Final[frozenset[str]] = frozenset({"opic", "opic-inlinks"})

#: ``bfs`` and ``larger-sites-first``: seeds and redirect targets first, then links,
#: then demoted hosts (``Politeness.should_demote``).
PRIORITY_SEED: Final = 0
PRIORITY_LINK: Final = 1
BFS_PRIORITIES: Final = 3

#: Cash of each seed (Abiteboul et al. 2003 give each of n pages 1/n; 1 per seed keeps a
#: URL's priority independent of how many seeds there are, and of seeds added later).
SEED_CASH: Final = 1.0

#: Front queues (``front_queues``) under ``opic``: priorities 0 .. 30 are the cash
#: bands [2^-p, 2^(1-p)) and 31 is the demoted one. The seeds' cash (n) is shared by
#: every URL they lead to, so among N queued URLs the mean cash is n / N: 31 bands
#: tell apart cash down to 2^-30 (about 1e-9), below the mean of a billion URLs from one
#: seed, and a URL whose cash is below that is as unimportant as any.
DEFAULT_FRONT_QUEUES: Final = 32

#: ``opic-inlinks``: the power of the in-link count in a URL's importance
#: (``cash * inlinks ** INLINK_POWER``). ``benchmarks/ordering_bench.py`` tried 1, 1.5,
#: 2 and 3 (bands of a factor 2 and 4): 1 trails breadth-first in the docs web's first
#: 1 %, 2 and 3 lead at every checkpoint on both graphs.
INLINK_POWER: Final = 2
#: ``opic-inlinks``: importance ``v`` in ``[2^(e-1), 2^e)`` gets priority
#: ``(IMPORTANCE_TOP - e) // 2``: priority 0 from ``2^30`` up (one seed's cash with 32 768
#: in-links), 30 below ``2^-28`` with the default 32 front queues.
IMPORTANCE_TOP: Final = 32


def cash_priority(cash: float, priorities: int) -> int:
    """The priority of a URL with ``cash`` among ``priorities`` front queues (``opic``).

    Cash in [2^-p, 2^(1-p)) gets priority ``p``: 1.0 and more (a seed) get 0, 0.5 gets
    1, 0.3 gets 2; cash too small for the bands, or ``<= 0``, gets ``priorities - 2``,
    the lowest band (``priorities - 1`` is the demoted queue's). ``priorities >= 2``.
    O(1), no logarithm (``math.frexp``).
    """
    low = priorities - 2
    if cash <= 0.0:
        return low
    p = 1 - frexp(cash)[1]
    if p <= 0:
        return 0
    return p if p < low else low


def importance_priority(cash: float, inlinks: int, priorities: int) -> int:
    """The priority of a URL with ``cash`` and ``inlinks`` among ``priorities`` front
    queues (``opic-inlinks``): its importance ``cash * inlinks ** INLINK_POWER`` in
    bands of a factor of 4 (``IMPORTANCE_TOP``); an importance too small for the
    bands, or ``<= 0`` (no cash: a sitemap URL), gets ``priorities - 2``, the lowest
    band (``priorities - 1`` is the demoted queue's). ``priorities >= 2``,
    ``inlinks >= 1``. O(1), no logarithm (``math.frexp``)."""
    low = priorities - 2
    importance = cash * inlinks**INLINK_POWER
    if importance <= 0.0:
        return low
    p = (IMPORTANCE_TOP - frexp(importance)[1]) >> 1
    if p <= 0:
        return 0
    return p if p < low else low


def priority_function(ordering: Ordering) -> Callable[[float, int, int], int]:
    """The frontier's ``(cash, inlinks, priorities) -> priority`` for a cash ordering
    (``CASH_ORDERINGS``): ``importance_priority`` under ``opic-inlinks``, else
    ``cash_priority`` (in-links ignored).

    Raises:
        ValueError: ``ordering`` carries no cash.
    """
    if ordering == "opic-inlinks":
        return importance_priority
    if ordering == "opic":
        return _cash_only
    raise ValueError(f"ordering {ordering!r} carries no cash")


def _cash_only(cash: float, inlinks: int, priorities: int) -> int:
    return cash_priority(cash, priorities)


def split_cash(cash: float, outlinks: int) -> float:
    """Each outlink's share of a fetched page's ``cash`` (OPIC): ``cash / outlinks``,
    ``0.0`` without outlinks (the cash is lost, as a page's without links in a crawl
    that cannot see the whole graph)."""
    return cash / outlinks if outlinks > 0 else 0.0


class Prioritizer:
    """The priorities and cash of one crawl's ordering.

    Args:
        ordering: one of ``ORDERINGS``.
        front_queues: front queues under ``opic`` and ``opic-inlinks`` (``>= 3``);
            ``bfs`` and ``larger-sites-first`` always have ``BFS_PRIORITIES``.

    Raises:
        ValueError: an unknown ``ordering``, or ``front_queues < 3``.

    Attributes:
        ordering: as given.
        priorities: the number of front queues the frontier gets (``Frontier``'s
            ``priorities``); the last one is the demoted hosts'.
        handed_out: cash handed to outlinks so far (``opic``; for the figures and the
            conservation test: it equals the cash of the pages fetched, less the
            shares of links that could not be followed and of pages without links).
    """

    __slots__ = ("_level", "handed_out", "ordering", "priorities")

    def __init__(
        self, ordering: Ordering = "bfs", front_queues: int = DEFAULT_FRONT_QUEUES
    ) -> None:
        if ordering not in ORDERINGS:
            raise ValueError(f"ordering must be one of {', '.join(ORDERINGS)}, got {ordering!r}")
        if front_queues < 3:
            raise ValueError(f"front_queues must be >= 3, got {front_queues!r}")
        self.ordering: Ordering = ordering
        by_cash = ordering in CASH_ORDERINGS
        self.priorities = front_queues if by_cash else BFS_PRIORITIES
        self.handed_out = 0.0
        self._level = priority_function(ordering) if by_cash else None

    @property
    def by_cash(self) -> bool:
        """Whether URLs carry cash that decides their priority (``CASH_ORDERINGS``)."""
        return self._level is not None

    @property
    def demoted(self) -> int:
        """The demoted hosts' priority, the lowest (``priorities - 1``)."""
        return self.priorities - 1

    def seed(self) -> tuple[float, int]:
        """``(cash, priority)`` of a new seed: ``SEED_CASH`` and the highest priority."""
        return (SEED_CASH if self.by_cash else 0.0), PRIORITY_SEED

    def priority(self, cash: float, inlinks: int = 1) -> int:
        """The priority of a URL with ``cash`` found by ``inlinks`` fetched pages
        (``priority_function`` of a cash ordering; ``PRIORITY_LINK`` otherwise)."""
        level = self._level
        if level is not None:
            return level(cash, inlinks, self.priorities)
        return PRIORITY_LINK

    def restored(self, priority: int, cash: float, inlinks: int = 1) -> int:
        """The priority of a URL stored with ``priority``, ``cash`` and ``inlinks``
        (read back from SQLite, or from the cluster's queue): under a cash ordering the
        better of ``priority`` and the one its cash and in-links give (a row spilled
        behind its host's read-back position was stored lower, ``FrontierWindow``),
        else ``priority``."""
        level = self._level
        if level is not None:
            return min(priority, level(cash, inlinks, self.priorities))
        return priority

    def share(self, cash: float, outlinks: int) -> float:
        """Each of ``outlinks``' share of a fetched page's ``cash`` (``split_cash``);
        ``0.0`` unless a cash ordering. Counted in ``handed_out``."""
        if not self.by_cash or outlinks <= 0:
            return 0.0
        self.handed_out += cash
        return cash / outlinks


__all__ = [
    "BFS_PRIORITIES",
    "CASH_ORDERINGS",
    "DEFAULT_FRONT_QUEUES",
    "DEFAULT_ORDERING",
    "IMPORTANCE_TOP",
    "INLINK_POWER",
    "ORDERINGS",
    "PRIORITY_LINK",
    "PRIORITY_SEED",
    "SEED_CASH",
    "Ordering",
    "Prioritizer",
    "cash_priority",
    "importance_priority",
    "priority_function",
    "split_cash",
]
