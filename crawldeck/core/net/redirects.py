"""Redirect chains: when a hop is followed, and the cookies that travel with it.

A **chain** is the sequence of URLs requested one after another because each answered
with a redirect: a 3xx with a ``Location`` (RFC 9110 §15.4) or an HTML page with a
meta refresh (HTML Standard §4.2.5.3, "refresh" pragma; see ``core.policy.links``). Each hop
goes through the crawl's gates like any URL (robots.txt, politeness, traps); this
module only says whether the next hop of a chain is taken, and with which cookies.

Rules (issue #10, items 2 and 3):

* **Loop**: the target is a URL already *requested* in this chain, spelled exactly the
  same, and the hop that leads to it set no cookie. A redirect that only changes the
  spelling (``%D0%BF`` -> ``%d0%bf``, ``?b=2&a=1`` -> ``?a=1&b=2``) is no loop: the
  new spelling is requested once (then a hop back to the first spelling is a loop).
  A self-redirect that sets a cookie (a consent or session gate: ``302 Location: /``
  with ``Set-Cookie``) is followed with the cookie: the request differs.
* **Too many redirects**: a chain of more than ``max_redirects`` hops (RFC 9110 §15.4
  asks clients to detect infinite redirection; browsers stop at 20, curl at 50,
  Scrapy at 20; crawldeck's default is 10).
* **Redirect trap**: a chain whose URL grows on two of its hops
  (``redirect_traps.redirect_grows``: a query that gets longer, a path that repeats, a
  URL nested in its own query) is cut at the second such hop, before the hop cap.

Cookies: the ``Set-Cookie`` headers of a chain's responses are kept for the rest of
that chain only, in the frontier entry (``FrontierEntry.cookies``), and sent with the
chain's later requests when RFC 6265 says they match (domain, path, ``Secure``,
expiry: aiohttp's ``CookieJar``, lenient about IP hosts). No cookie outlives its
chain: every other request of the crawl is sent without cookies, so a session id in
a cookie can never make a crawl trap. A chain cut by a stop or a kill resumes
from its next hop with its loop memory; one that had cookies goes on without them
and without its memory (which would call a cookie gate's redirect a loop).
"""

from __future__ import annotations

from collections.abc import Iterable
from http.cookies import CookieError, SimpleCookie
from itertools import pairwise

import aiohttp
from yarl import URL

from crawldeck.core.policy.redirect_traps import redirect_grows
from crawldeck.core.policy.traps import BlockReason, Verdict

#: Growing hops after which a chain is cut as a ``redirect_trap`` (issue #10 item 3).
MAX_GROWING_HOPS = 2


def judge_hop(
    chain: tuple[str, ...], source: str, target: str, *, set_cookie: bool, max_redirects: int
) -> Verdict | None:
    """Whether the hop ``source`` -> ``target`` of a chain is followed (``None``) or
    ends the chain (a ``Verdict`` for ``target``); see the module docstring.

    Args:
        chain: the URLs requested before ``source`` in this chain, oldest first.
        source: the URL that answered with the redirect (cleaned).
        target: where it leads (cleaned by ``core.policy.urls.clean``).
        set_cookie: the redirect's response set at least one cookie.
        max_redirects: the hop cap (``CrawlConfig.max_redirects``).

    Returns:
        ``None`` to follow, else ``Verdict`` with ``redirect_loop``,
        ``too_many_redirects`` or ``redirect_trap`` and a one-line detail.
    """
    hops = len(chain) + 1  # the hops made so far, this one included
    sent = (*chain, source)
    if target in sent and not set_cookie:
        first = sent.index(target) + 1
        return Verdict(
            BlockReason.REDIRECT_LOOP,
            f"loop after {hops} hops: back to hop {first} ({target})",
        )
    if hops > max_redirects:
        return Verdict(
            BlockReason.TOO_MANY_REDIRECTS, f"{hops} hops > max_redirects {max_redirects}"
        )
    path = (*sent, target)
    growing = sum(1 for a, b in pairwise(path) if redirect_grows(a, b))
    if growing >= MAX_GROWING_HOPS:
        return Verdict(
            BlockReason.REDIRECT_TRAP,
            f"the URL grew on {growing} of {hops} hops ({len(source)} -> {len(target)} chars)",
        )
    return None


def set_cookies(url: str, values: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """``(url, value)`` for each ``Set-Cookie`` header value of a response from ``url``
    (the form ``FrontierEntry.cookies`` keeps)."""
    return tuple((url, value) for value in values if value.strip())


def cookie_header(cookies: Iterable[tuple[str, str]], url: str) -> str | None:
    """The ``Cookie`` header a request to ``url`` carries within its chain, or ``None``.

    Args:
        cookies: ``(url that set it, Set-Cookie value)`` pairs, oldest first (a later
            cookie of the same name, domain and path replaces an earlier one).
        url: the request's URL (cleaned).

    RFC 6265 §5.3-§5.4 by aiohttp's ``CookieJar`` (``unsafe=True``: cookies of IP
    hosts are kept, as a browser keeps them). A value that does not parse is skipped.
    Needs a running event loop (aiohttp's jar asks for it). Never raises.
    """
    jar: aiohttp.CookieJar | None = None
    for source, value in cookies:
        parsed: SimpleCookie = SimpleCookie()
        try:
            parsed.load(value)
        except CookieError:
            continue
        if not parsed:
            continue
        if jar is None:
            jar = aiohttp.CookieJar(unsafe=True)
        jar.update_cookies(parsed, URL(source, encoded=True))
    if jar is None:
        return None
    found = jar.filter_cookies(URL(url, encoded=True))
    return "; ".join(f"{name}={morsel.coded_value}" for name, morsel in found.items()) or None


__all__ = ["MAX_GROWING_HOPS", "cookie_header", "judge_hop", "set_cookies"]
