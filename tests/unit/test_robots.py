"""core.net.robots against real robots.txt servers on loopback, with a fake clock: the
tests that need no server, process or console (pure logic, the store, virtual time); the
others are in ``tests/loopback/test_robots.py``."""

from __future__ import annotations

from email.utils import formatdate

import pytest
import robotskit
from robotskit import DAY, ONLY_US, T0

from crawldeck.core.errors import UrlError
from crawldeck.core.net.robots import RobotsCache
from crawldeck.core.policy.robots import RobotsGroup, select_group, ttl_s

#: The fixtures shared with the other tier's file, as fixtures of this module.
audit = robotskit.audit
cache = robotskit.cache
clock = robotskit.clock
fetcher = robotskit.fetcher


def test_ttl_rules() -> None:
    date = formatdate(T0, usegmt=True)
    assert ttl_s({"cache-control": "max-age=600"}, T0, DAY) == 600
    assert ttl_s({"cache-control": 'max-age="1200", public'}, T0, DAY) == 1200
    assert ttl_s({"cache-control": "max-age=10"}, T0, DAY) == 60  # one-minute floor
    assert ttl_s({"cache-control": "no-cache"}, T0, DAY) == 60
    assert ttl_s({"cache-control": "max-age=5"}, T0, 30) == 30
    assert ttl_s({}, T0, DAY) == DAY
    assert ttl_s({"cache-control": "private"}, T0, DAY) == DAY
    expires = formatdate(T0 + 7200, usegmt=True)
    assert ttl_s({"expires": expires}, T0, DAY) == 7200
    assert ttl_s({"expires": expires, "date": date}, T0 + 999, DAY) == 7200
    assert ttl_s({"expires": expires, "cache-control": "max-age=300"}, T0, DAY) == 300
    assert ttl_s({"expires": "0"}, T0, DAY) == 60
    assert ttl_s({"expires": formatdate(T0 + 9 * DAY, usegmt=True)}, T0, DAY) == DAY


@pytest.mark.parametrize("digits", [400, 5000, 1_000_000])
def test_ttl_huge_max_age_is_very_large_never_raises(digits: int) -> None:
    # 400 nines: float(int()) overflowed; 5000: int() refused them (read as 0 -> 60 s).
    assert ttl_s({"cache-control": "max-age=" + "9" * digits}, T0, DAY) == DAY
    assert ttl_s({"cache-control": f'max-age="{"9" * digits}"'}, T0, 10**12) == 2.0**31
    assert ttl_s({"cache-control": "max-age=" + "0" * digits + "600"}, T0, DAY) == 600


def test_ttl_max_age_must_be_digits() -> None:
    for value in ["-5", "+600", "6_00", "1e3", ""]:
        assert ttl_s({"cache-control": f"max-age={value}"}, T0, DAY) == 60, value


async def test_bad_urls_and_unknown_origins(cache: RobotsCache) -> None:
    with pytest.raises(UrlError):
        await cache.check("ftp://example.test/file")
    with pytest.raises(UrlError):
        await cache.check("/relative/path")
    assert cache.entry("http://never.test") is None
    assert cache.entry("not a url") is None
    assert cache.origins() == 0


def test_select_group() -> None:
    txt = """\
# comment
Disallow: /before-any-group
User-agent: a
User-agent: CrawlDeck/2.0   # two agents, one group; the product token is compared
Disallow: /one
Allow: /one/ok
Disallow:
Crawl-delay: 4

User-agent: *
Disallow: /star
Crawl-delay: 1

user-agent: crawldeck
dissallow: /two
Sitemap: http://example.test/sitemap.xml
Disallow /three
Crawl-delay: nan
"""
    assert select_group(txt, "crawldeck") == RobotsGroup(
        "crawldeck",
        (("disallow", "/one"), ("allow", "/one/ok"), ("disallow", "/two"), ("disallow", "/three")),
        4.0,
    )
    assert select_group(txt, "a") == RobotsGroup(
        "a", (("disallow", "/one"), ("allow", "/one/ok")), 4.0
    )
    assert select_group(txt, "zzz") == RobotsGroup("*", (("disallow", "/star"),), 1.0)
    assert select_group("", "crawldeck") == RobotsGroup(None, (), None)
    assert select_group("<html><p>a: b</p></html>", "crawldeck") == RobotsGroup(None, (), None)


def test_empty_disallow_group_applies() -> None:
    # RFC 9309 §2.2.2: an empty Disallow disallows nothing, but the group exists, so
    # "*" does not apply to us (the "allow only this bot" idiom).
    assert select_group(ONLY_US, "crawldeck") == RobotsGroup("crawldeck", (), None)
    assert select_group(ONLY_US, "otherbot") == RobotsGroup("*", (("disallow", "/"),), None)
    # A group naming us with no rule at all (RFC 9309 §2.1 grammar: *(rule / emptyline)).
    empty = "User-agent: *\nDisallow: /\n\nUser-agent: crawldeck\n"
    assert select_group(empty, "crawldeck") == RobotsGroup("crawldeck", (), None)
    only_allow = "User-agent: crawldeck\nAllow:\nUser-agent: *\nDisallow: /\n"
    assert select_group(only_allow, "crawldeck") == RobotsGroup("crawldeck", (), None)
    # "*" named without rules applies too (nothing disallowed).
    assert select_group("User-agent: *\nDisallow:\n", "x") == RobotsGroup("*", (), None)
