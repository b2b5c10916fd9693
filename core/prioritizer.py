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

``larger-sites-first``
    Baeza-Yates et al. (2005) and Castillo's thesis ("Effective web crawling", 2004,
    §4): among ready hosts, the host with the most pending URLs first (counted in
    memory, by binary order of magnitude: 9 and 15 tie, 16 beats them); within a host,
    breadth-first. Priorities as ``bfs``.

The order never makes a host faster: it only chooses among the hosts whose politeness
time has come (``Frontier.release``'s ``at``) and within a host's queue.

Shapes: cash is a ``float`` (no unit, the seeds' total is their number); a priority is
an ``int``, ``0`` the highest, ``priorities - 1`` the demoted one.
"""

from __future__ import annotations

from math import frexp
from typing import Final, Literal, get_args

Ordering = Literal["bfs", "opic", "larger-sites-first"]
#: The values of the ``ordering`` config key.
ORDERINGS: Final[tuple[str, ...]] = get_args(Ordering)

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


def split_cash(cash: float, outlinks: int) -> float:
    """Each outlink's share of a fetched page's ``cash`` (OPIC): ``cash / outlinks``,
    ``0.0`` without outlinks (the cash is lost, as a page's without links in a crawl
    that cannot see the whole graph)."""
    return cash / outlinks if outlinks > 0 else 0.0


class Prioritizer:
    """The priorities and cash of one crawl's ordering.

    Args:
        ordering: ``bfs``, ``opic`` or ``larger-sites-first`` (``ORDERINGS``).
        front_queues: front queues under ``opic`` (``>= 3``); ``bfs`` and
            ``larger-sites-first`` always have ``BFS_PRIORITIES``.

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

    __slots__ = ("handed_out", "ordering", "priorities")

    def __init__(
        self, ordering: Ordering = "bfs", front_queues: int = DEFAULT_FRONT_QUEUES
    ) -> None:
        if ordering not in ORDERINGS:
            raise ValueError(f"ordering must be one of {', '.join(ORDERINGS)}, got {ordering!r}")
        if front_queues < 3:
            raise ValueError(f"front_queues must be >= 3, got {front_queues!r}")
        self.ordering: Ordering = ordering
        self.priorities = front_queues if ordering == "opic" else BFS_PRIORITIES
        self.handed_out = 0.0

    @property
    def by_cash(self) -> bool:
        """Whether URLs carry cash that decides their priority (``opic``)."""
        return self.ordering == "opic"

    @property
    def demoted(self) -> int:
        """The demoted hosts' priority, the lowest (``priorities - 1``)."""
        return self.priorities - 1

    def seed(self) -> tuple[float, int]:
        """``(cash, priority)`` of a new seed: ``SEED_CASH`` and the highest priority."""
        return (SEED_CASH if self.by_cash else 0.0), PRIORITY_SEED

    def priority(self, cash: float) -> int:
        """The priority of a URL found by a link with ``cash`` (``cash_priority`` under
        ``opic``, ``PRIORITY_LINK`` otherwise)."""
        if self.by_cash:
            return cash_priority(cash, self.priorities)
        return PRIORITY_LINK

    def redirect_priority(self, cash: float) -> int:
        """The priority of a redirect's target, which gets all of its source's ``cash``
        (``opic``); ``PRIORITY_SEED`` otherwise (a redirect target goes first)."""
        if self.by_cash:
            return cash_priority(cash, self.priorities)
        return PRIORITY_SEED

    def restored(self, priority: int, cash: float) -> int:
        """The priority of a URL stored with ``priority`` and ``cash`` (read back from
        SQLite, or handed out from a cluster's queue in Redis): under ``opic`` the
        better of the two (a row spilled behind its host's read-back
        position was stored lower than its cash says, ``FrontierWindow``), else
        ``priority``."""
        if self.by_cash:
            return min(priority, cash_priority(cash, self.priorities))
        return priority

    def share(self, cash: float, outlinks: int) -> float:
        """Each of ``outlinks``' share of a fetched page's ``cash`` (``split_cash``);
        ``0.0`` unless ``opic``. Counted in ``handed_out``."""
        if not self.by_cash or outlinks <= 0:
            return 0.0
        self.handed_out += cash
        return cash / outlinks


__all__ = [
    "BFS_PRIORITIES",
    "DEFAULT_FRONT_QUEUES",
    "ORDERINGS",
    "PRIORITY_LINK",
    "PRIORITY_SEED",
    "SEED_CASH",
    "Ordering",
    "Prioritizer",
    "cash_priority",
    "split_cash",
]
