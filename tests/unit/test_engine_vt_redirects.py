"""Redirect chains and traps at the engine level on virtual time (issue #10 items 1-5,
issue #11 item 3).

A hop that only changes the spelling is followed, a self-redirect that sets a cookie
is followed with it, a real loop fails its URLs with the reason, a growing chain is
cut at its second growing hop, ``max_redirects`` ends a chain, a meta refresh is a
hop like a 3xx; traps (session ids, calendars, depth, the per-host cap, repeating
paths) and ``max_pages`` bound what is fetched. The evidence is the ``FakeSite``'s
request log and the SQLite file.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from fakesite import (
    During,
    FakeSite,
    Reply,
    Request,
    crawl,
    gaps,
    html,
    links_page,
    redirect,
    text,
)
from virtualtime import EPOCH

from crawldeck.core.crawl.engine import Engine

A = "http://127.0.0.1"
SLACK = 0.005


# ---------------------------------------------------------------- redirects


def test_a_redirect_to_another_spelling_of_the_same_url_is_followed(tmp_path: Path) -> None:
    site = FakeSite()
    site.add(A + "/", links_page("/news/%D0%BF", "/q?b=2&a=1"))
    site.add(A + "/news/%D0%BF", redirect("/news/%d0%bf"))
    site.add(A + "/news/%d0%bf", links_page(text="the news"))
    site.add(A + "/q?b=2&a=1", redirect("/q?a=1&b=2"))
    site.add(A + "/q?a=1&b=2", links_page(text="query"))
    c = crawl(site, [A + "/"], tmp_path / "c.db")
    assert sorted(site.targets(A)) == sorted(
        ["/", "/news/%D0%BF", "/news/%d0%bf", "/q?b=2&a=1", "/q?a=1&b=2"]
    )
    got = dict(c.rows("SELECT url, status FROM pages"))
    assert got[A + "/news/%d0%bf"] == 200 and got[A + "/q?a=1&b=2"] == 200
    assert c.rows("SELECT * FROM blocked") == []
    assert {s for (s,) in c.rows("SELECT state FROM frontier")} == {"done"}


def test_redirect_hops_wait_for_politeness(tmp_path: Path) -> None:
    site = FakeSite()
    site.add(A + "/", redirect("/one", 302))
    site.add(A + "/one", redirect("/two", 307))
    site.add(A + "/two", links_page())
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=700)
    log = site.of(A)
    assert [r.target for r in log] == ["/robots.txt", "/", "/one", "/two"]
    for gap in gaps(log):
        assert 0.7 <= gap <= 0.7 + SLACK
    assert c.value("SELECT final_url FROM pages WHERE url = ?", A + "/") == A + "/one"


def test_a_self_redirect_that_sets_a_cookie_is_followed_with_it_within_its_chain_only(
    tmp_path: Path,
) -> None:
    def home(request: Request) -> Reply:
        if "consent=yes" in request.headers.get("Cookie", ""):
            return links_page("/a")
        return redirect("/", 302, set_cookie="consent=yes; Path=/")

    site = FakeSite()
    site.add(A + "/", home)
    site.add(A + "/a", links_page())
    c = crawl(site, [A + "/"], tmp_path / "c.db")
    log = [(r.target, r.headers.get("Cookie")) for r in site.of(A)[1:]]
    assert log == [("/", None), ("/", "consent=yes"), ("/a", None)]
    assert dict(c.rows("SELECT url, status FROM pages")) == {A + "/": 200, A + "/a": 200}


def test_a_cookie_gate_on_another_url_sends_the_chain_back_with_the_cookie(
    tmp_path: Path,
) -> None:
    def article(request: Request) -> Reply:
        if "ok=1" in request.headers.get("Cookie", ""):
            return links_page(text="the article")
        return redirect("/consent?next=/article", 302)

    site = FakeSite()
    site.add(A + "/article", article)
    site.add(A + "/consent?next=/article", redirect("/article", 302, set_cookie="ok=1"))
    c = crawl(site, [A + "/article"], tmp_path / "c.db")
    assert site.targets(A) == ["/article", "/consent?next=/article", "/article"]
    assert site.of(A)[-1].headers == {"Cookie": "ok=1"}
    assert dict(c.rows("SELECT url, status FROM pages"))[A + "/article"] == 200


def test_a_real_loop_fails_its_urls_with_the_reason(tmp_path: Path) -> None:
    site = FakeSite()
    site.add(A + "/a", redirect("/b"))
    site.add(A + "/b", redirect("/a"))
    c = crawl(site, [A + "/a"], tmp_path / "c.db")
    assert site.targets(A) == ["/a", "/b"]
    assert dict(c.rows("SELECT url, state FROM frontier")) == {
        A + "/a": "failed",
        A + "/b": "failed",
    }
    for url, error in c.rows("SELECT url, error FROM pages"):
        assert error is not None and error.startswith("redirect_loop: "), (url, error)
    assert c.rows("SELECT reason FROM blocked") == [("redirect_loop",)]


def stop_once_answered(reply: Reply) -> tuple[Callable[[Request], Reply], During]:
    """A handler that answers ``reply``, and a ``during`` that stops the crawl one
    virtual second after the handler's first request."""
    asked = asyncio.Event()

    def handler(request: Request) -> Reply:
        asked.set()
        return reply

    async def during(engine: Engine) -> None:
        await asked.wait()
        await asyncio.sleep(1.0)
        engine.request_stop()

    return handler, during


def test_a_loop_stopped_halfway_is_still_a_loop_after_the_resume(tmp_path: Path) -> None:
    """``/a`` -> ``/b`` -> ``/a``, stopped after ``/a``: the resume goes on from ``/b``
    with the chain's memory, so the loop fails its URLs with the reason, as in one run
    (issue #25 trial 13: the resumed hop's redirect back to ``/a``, seen already, was
    dropped, and the loop was lost)."""
    site = FakeSite()
    handler, during = stop_once_answered(redirect("/b", 302))
    site.add(A + "/", links_page("/a"))
    site.add(A + "/a", handler)
    site.add(A + "/b", redirect("/a", 302))
    db = tmp_path / "c.db"
    first = crawl(site, [A + "/"], db, delay_ms=2000, during=during)
    assert first.result.outcome == "stopped" and site.targets(A) == ["/", "/a"]
    again = crawl(site, [A + "/"], db, start=first.ended + 60, delay_ms=2000)
    assert site.targets(A) == ["/", "/a", "/b"]
    errors = dict(again.rows("SELECT url, error FROM pages WHERE status = 302"))
    assert errors == {
        A + "/a": "redirect_loop: loop after 2 hops: back to hop 1 (http://127.0.0.1/a)",
        A + "/b": "redirect_loop: loop after 2 hops: back to hop 1 (http://127.0.0.1/a)",
    }
    assert again.rows("SELECT reason FROM blocked") == [("redirect_loop",)]


def test_a_cookie_gate_stopped_halfway_starts_over_on_resume(tmp_path: Path) -> None:
    """``/article`` -> ``/consent`` (sets the cookie) -> ``/article``, stopped before the
    last hop: a resume has no cookie, so the chain starts over from ``/article`` (its
    loop memory would call the gate's redirect a loop) and gets the article."""

    def article(request: Request) -> Reply:
        if "ok=1" in request.headers.get("Cookie", ""):
            return links_page(text="the article")
        return redirect("/consent?next=/article", 302)

    site = FakeSite()
    handler, during = stop_once_answered(redirect("/article", 302, set_cookie="ok=1"))
    site.add(A + "/article", article)
    site.add(A + "/consent?next=/article", handler)
    db = tmp_path / "c.db"
    first = crawl(site, [A + "/article"], db, delay_ms=2000, during=during)
    assert first.result.outcome == "stopped"
    again = crawl(site, [A + "/article"], db, start=first.ended + 60, delay_ms=2000)
    assert site.targets(A)[2:] == ["/article", "/consent?next=/article", "/article"]
    assert dict(again.rows("SELECT url, status FROM pages"))[A + "/article"] == 200
    assert again.rows("SELECT reason FROM blocked") == []


@pytest.mark.parametrize(
    ("seed", "grow"),
    [
        ("/grow?x=1", lambda t: t + "&x=1"),  # a query that gets longer
        ("/grow/a", lambda t: t + "/a"),  # a path that repeats
        ("/grow?r=ab", lambda t: t.replace("r=", "r=ab", 1)),  # a value that repeats
    ],
)
def test_a_chain_whose_url_grows_is_cut_after_two_growing_hops(
    tmp_path: Path, seed: str, grow: Callable[[str], str]
) -> None:
    site = FakeSite()
    site.host(A, lambda r: redirect(grow(r.target), 302))
    site.add(A + "/robots.txt", Reply(404))
    c = crawl(site, [A + seed], tmp_path / "c.db", max_redirects=20)
    assert len(site.targets(A)) == 2  # the seed and one grown URL, not max_redirects
    assert c.rows("SELECT reason FROM blocked") == [("redirect_trap",)]
    assert {s for (s,) in c.rows("SELECT state FROM frontier")} == {"failed"}


def test_a_chain_of_new_urls_ends_at_max_redirects(tmp_path: Path) -> None:
    site = FakeSite()
    for n in range(10):
        site.add(f"{A}/hop{n}", redirect(f"/hop{n + 1}", 302))
    c = crawl(site, [A + "/hop0"], tmp_path / "c.db", max_redirects=4)
    assert site.targets(A) == [f"/hop{n}" for n in range(5)]  # the seed and four hops
    assert c.rows("SELECT url, reason FROM blocked") == [(A + "/hop5", "too_many_redirects")]
    states = {s for (s,) in c.rows("SELECT state FROM frontier")}
    assert states == {"failed"}


@pytest.mark.parametrize(
    "content",
    ["0; URL=/target", "0;url='/target'", '0; URL="/target"', "0 ; url = /target", "0;/target",
     "1,URL=/target", "  0 ;  URL=/target  "],
)  # fmt: skip
def test_a_meta_refresh_is_followed_as_a_redirect_after_the_delay(
    tmp_path: Path, content: str
) -> None:
    quote = "'" if '"' in content else '"'
    site = FakeSite()
    site.add(A + "/", html(f"<meta http-equiv=Refresh content={quote}{content}{quote}><p>x"))
    site.add(A + "/target", links_page(text="here"))
    c = crawl(site, [A + "/"], tmp_path / "c.db", delay_ms=150)
    assert site.targets(A) == ["/", "/target"]
    assert c.value("SELECT final_url FROM pages WHERE url = ?", A + "/") == A + "/target"
    assert 0.15 <= gaps(site.of(A))[-1] <= 0.15 + SLACK  # the hop waited for politeness


def test_a_meta_refresh_loop_and_a_refresh_to_a_disallowed_url(tmp_path: Path) -> None:
    site = FakeSite()
    site.add(A + "/robots.txt", text("User-agent: *\nDisallow: /private\n"))
    site.add(A + "/", links_page("/r1", "/p"))
    site.add(A + "/r1", html('<meta http-equiv="refresh" content="0;url=/r2">'))
    site.add(A + "/r2", html('<meta http-equiv="refresh" content="0;url=/r1">'))
    site.add(A + "/p", html('<meta http-equiv="refresh" content="0;url=/private/x">'))
    c = crawl(site, [A + "/"], tmp_path / "c.db")
    assert sorted(site.targets(A)) == ["/", "/p", "/r1", "/r2"]
    states = dict(c.rows("SELECT url, state FROM frontier"))
    assert states[A + "/r1"] == states[A + "/r2"] == "failed"
    assert dict(c.rows("SELECT url, reason FROM blocked")) == {
        A + "/r1": "redirect_loop",
        A + "/private/x": "robots",
    }


# -------------------------------------------------------------------- traps

_SESSION = re.compile(r";(?:jsessionid|sid|phpsessid)=[0-9a-f]+", re.IGNORECASE)


def test_a_site_minting_a_session_id_into_every_link_is_crawled_once(tmp_path: Path) -> None:
    """Every page links two other items and home, each with a fresh session id in a
    path parameter: each page is fetched once (the dedupe key drops the ids)."""
    items = 8
    minted = iter(range(10**6))

    def page(request: Request) -> Reply:
        path = _SESSION.sub("", request.target).partition("?")[0]
        me = 0 if path == "/" else int(path.rpartition("/")[2])
        sid = f"{next(minted):08x}"
        spellings = [f"/item/{(me + 1) % items};jsessionid={sid}",
                     f"/item/{(me + 3) % items};JSESSIONID={sid}", f"/;sid={sid}"]  # fmt: skip
        return links_page(*spellings)

    site = FakeSite()
    site.host(A, page)
    site.add(A + "/robots.txt", Reply(404))
    crawl(site, [A + "/"], tmp_path / "c.db", max_pages=60, max_depth=50)
    fetched = Counter(_SESSION.sub("", t) for t in site.targets(A))
    assert max(fetched.values()) == 1, fetched
    assert set(fetched) == {"/"} | {f"/item/{n}" for n in range(items)}


def previous_month(request: Request) -> Reply:
    """A calendar page linking to the month before it, forever."""
    _, _, year, month, _ = request.target.split("/")
    y, m = (int(year) - 1, 12) if month == "01" else (int(year), int(month) - 1)
    return links_page(f"/cal/{y}/{m:02d}/")


def test_an_endless_past_calendar_is_cut_at_the_date_budget(tmp_path: Path) -> None:
    site = FakeSite()
    site.host(A, previous_month)
    site.add(A + "/robots.txt", Reply(404))
    # the virtual clock starts on 2023-11-14 (EPOCH): the guard's "today" is its date
    c = crawl(site, [A + "/cal/2023/11/"], tmp_path / "c.db", max_depth=100_000,
              calendar_max_dates=30)  # fmt: skip
    assert len(site.targets(A)) == 30
    assert site.targets(A)[-1] == "/cal/2021/06/"  # 30 months back from 2023-11
    assert c.rows("SELECT reason, count(*) FROM blocked GROUP BY reason") == [("calendar", 1)]


def test_a_resumed_crawl_does_not_hand_the_calendar_budget_out_again(tmp_path: Path) -> None:
    site = FakeSite()
    site.host(A, previous_month)
    site.add(A + "/robots.txt", Reply(404))
    db = tmp_path / "c.db"
    first = crawl(site, [A + "/cal/2023/11/"], db, max_depth=100_000, calendar_max_dates=30,
                  max_pages=15)  # fmt: skip
    assert first.result.outcome == "max_pages"
    crawl(site, [A + "/cal/2023/11/"], db, start=first.ended + 1, max_depth=100_000,
          calendar_max_dates=30)  # fmt: skip
    calendar = site.targets(A)
    assert len(calendar) == len(set(calendar)) == 30


def test_links_past_max_depth_are_blocked_as_depth(tmp_path: Path) -> None:
    site = FakeSite()
    site.host(A, lambda r: links_page(f"{r.target}/{r.target.count('/')}"))
    site.add(A + "/robots.txt", Reply(404))
    c = crawl(site, [A + "/s"], tmp_path / "c.db", max_depth=3)
    assert site.targets(A) == ["/s", "/s/1", "/s/1/2", "/s/1/2/3"]
    assert c.rows("SELECT url, reason FROM blocked") == [(A + "/s/1/2/3/4", "depth")]
    assert c.rows("SELECT max(depth) FROM pages") == [(3,)]


def test_a_host_gets_at_most_max_per_host_urls(tmp_path: Path) -> None:
    site = FakeSite()
    site.host(A, lambda r: links_page(*(f"/x{i}" for i in range(20))))
    site.add(A + "/robots.txt", Reply(404))
    c = crawl(site, [A + "/"], tmp_path / "c.db", max_per_host=6)
    assert len(site.targets(A)) == 6  # the seed and five links
    assert c.value("SELECT count(*) FROM blocked WHERE reason = 'host_cap'") == 15


def test_a_repeating_path_is_a_trap(tmp_path: Path) -> None:
    site = FakeSite()
    site.host(A, lambda r: links_page(r.target.rstrip("/") + "/loop/"))
    site.add(A + "/robots.txt", Reply(404))
    c = crawl(site, [A + "/"], tmp_path / "c.db", max_segment_repeats=2, max_depth=50)
    assert site.targets(A) == ["/", "/loop/", "/loop/loop/"]
    assert c.rows("SELECT url, reason FROM blocked") == [(A + "/loop/loop/loop/", "repeating_path")]


def test_max_pages_stops_the_crawl_with_the_rest_queued(tmp_path: Path) -> None:
    site = FakeSite()
    site.add(A + "/", links_page(*(f"/x{i}" for i in range(10))))
    for i in range(10):
        site.add(f"{A}/x{i}", links_page())
    c = crawl(site, [A + "/"], tmp_path / "c.db", max_pages=4, delay_ms=100)
    assert c.result.outcome == "max_pages"
    assert c.result.counters.pages == 4
    assert len(site.targets(A)) == 4
    states = Counter(s for (s,) in c.rows("SELECT state FROM frontier"))
    assert states == {"done": 4, "queued": 7}


def test_the_calendar_window_counts_from_the_engines_clock(tmp_path: Path) -> None:
    """One clock: a year more than calendar_window_years after the clock's date is a
    calendar trap at once; the same year from a clock three years later is not."""
    site = FakeSite()
    site.host(A, lambda r: links_page())
    site.add(A + "/robots.txt", Reply(404))
    seed = A + "/cal/2026/05/"
    early = crawl(site, [seed], tmp_path / "a.db", calendar_window_years=2)
    assert early.rows("SELECT reason FROM blocked") == [("calendar",)]
    later = crawl(site, [seed], tmp_path / "b.db", start=EPOCH + 3 * 365 * 86_400,
                  calendar_window_years=2)  # fmt: skip
    assert later.rows("SELECT reason FROM blocked") == []
    assert later.rows("SELECT url FROM pages") == [(seed,)]
