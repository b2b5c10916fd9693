"""core.render.render_session: a page's settling and its sub-request reports, on a fake clock.

``settle_step`` is pure and is checked exactly, by table and by property; ``settle``
and the router are driven with stand-ins for Playwright's request, response and route
objects (only the attributes the session reads), with the session's clock faked, so
"cut at the deadline" and "elapsed from the gate's yes" are exact figures, not wall
clock readings. The browser itself is tested in ``tests/unit/test_render.py``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import pytest
from fakeclock import FakeClock
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.render.render_session import MIN_WAIT_S, RenderSession, settle_step
from crawldeck.core.render_types import SubRequestEnd

if TYPE_CHECKING:
    from playwright.async_api import Request, Response, Route

HTML = "text/html; charset=utf-8"


@dataclass
class FakeFrame:
    parent_frame: object | None = None


@dataclass(eq=False)
class FakeRequest:
    """The attributes of ``playwright.async_api.Request`` the session reads."""

    url: str
    resource_type: str = "fetch"
    navigation: bool = False
    failure: str | None = None
    frame: FakeFrame = field(default_factory=FakeFrame)

    def is_navigation_request(self) -> bool:
        return self.navigation


@dataclass
class FakeResponse:
    request: FakeRequest
    status: int
    headers: dict[str, str]

    @property
    def url(self) -> str:
        return self.request.url


@dataclass
class FakeRoute:
    """Records what the router did with a request."""

    done: list[str] = field(default_factory=list)

    async def continue_(self) -> None:
        self.done.append("continue")

    async def abort(self, error_code: str) -> None:
        self.done.append(f"abort {error_code}")

    async def fulfill(self, **kwargs: Any) -> None:
        self.done.append("fulfill")


def req(fake: FakeRequest) -> Request:
    return cast("Request", fake)


async def allow(url: str, resource_type: str) -> bool:
    return not url.endswith("/private")


def session(clock: FakeClock, reports: list[SubRequestEnd] | None = None) -> RenderSession:
    report = reports.append if reports is not None else None
    return RenderSession(b"<html></html>", HTML, allow, report, frozenset({"image"}), clock=clock)


async def turns(n: int = 5) -> None:
    """Let the other tasks run ``n`` turns of the loop (they wait on events, not time)."""
    for _ in range(n):
        await asyncio.sleep(0)


# ------------------------------------------------------------------------- settle_step


@pytest.mark.parametrize(
    ("now", "last", "inflight", "expected"),
    [
        (100.0, 100.0, 1, 1.5),  # busy: wait until the deadline
        (100.0, 100.0, 0, 0.25),  # quiet: wait until the idle time is up
        (100.125, 100.0, 0, 0.125),
        (100.25, 100.0, 0, "settled"),
        (101.5, 100.0, 1, "cut"),  # busy at the deadline: cut there
        (101.625, 100.0, 3, "cut"),
        (101.5, 101.375, 0, "cut"),  # quiet for 0.125 s only at the deadline: cut
        (101.5, 101.25, 0, "settled"),  # settled at the deadline wins
        (101.4999, 100.0, 1, MIN_WAIT_S),  # never a wait of (almost) nothing
    ],
)
def test_settle_step_table(now: float, last: float, inflight: int, expected: str | float) -> None:
    step = settle_step(now=now, last_activity=last, inflight=inflight, deadline=101.5, idle_s=0.25)
    if isinstance(expected, str):
        assert step == expected
    else:
        assert isinstance(step, float) and step == pytest.approx(expected)


@given(
    start=st.floats(0, 1e6),
    quiet=st.floats(0, 10),
    inflight=st.integers(0, 5),
    left=st.floats(-5, 20),
    idle_s=st.floats(0.001, 5),
)
def test_settle_step_waits_only_while_busy_and_before_the_deadline(
    start: float, quiet: float, inflight: int, left: float, idle_s: float
) -> None:
    now = start + quiet
    deadline = now + left
    step = settle_step(
        now=now, last_activity=start, inflight=inflight, deadline=deadline, idle_s=idle_s
    )
    idle = inflight == 0 and now - start >= idle_s
    if idle:
        assert step == "settled"
    elif now >= deadline:
        assert step == "cut"
    else:
        assert isinstance(step, float)
        assert MIN_WAIT_S <= step <= max(deadline - now, MIN_WAIT_S)  # never past the deadline
        if inflight == 0:
            assert step <= max(idle_s - (now - start), MIN_WAIT_S)


# ------------------------------------------------------------------------- settle


async def test_a_busy_page_is_cut_exactly_at_the_deadline() -> None:
    clock = FakeClock(100.0)
    s = session(clock)
    hang = FakeRequest("http://a.test/api/hang")
    s.on_request(req(hang))  # in flight for good
    task = asyncio.create_task(s.settle(deadline=101.5, idle_s=0.25))
    for now in (100.5, 101.0, 101.4999):
        clock.now = now
        s.changed.set()  # wake it to look at the clock again
        await turns()
        assert not task.done(), now
    clock.now = 101.5
    s.changed.set()
    await turns()
    assert task.done() and task.result() is False


async def test_a_page_settles_after_idle_s_without_requests() -> None:
    clock = FakeClock(100.0)
    s = session(clock)
    script = FakeRequest("http://a.test/app.js", resource_type="script")
    s.on_request(req(script))
    task = asyncio.create_task(s.settle(deadline=101.5, idle_s=0.25))
    clock.now = 100.25
    s.on_request_done(req(script))  # quiet from 100.25 on
    await turns()
    clock.now = 100.4999
    s.changed.set()
    await turns()
    assert not task.done()
    clock.now = 100.5
    s.changed.set()
    await turns()
    assert task.done() and task.result() is True


async def test_a_request_restarts_the_idle_time() -> None:
    clock = FakeClock(100.0)
    s = session(clock)
    task = asyncio.create_task(s.settle(deadline=101.5, idle_s=0.25))
    poll = FakeRequest("http://a.test/api/tick?n=1")
    clock.now = 100.125
    s.on_request(req(poll))
    clock.now = 100.25
    s.on_request_done(req(poll))
    await turns()
    clock.now = 100.375  # 0.375 s since the start, 0.125 s since the poll ended
    s.changed.set()
    await turns()
    assert not task.done()
    clock.now = 100.5
    s.changed.set()
    await turns()
    assert task.result() is True


# ------------------------------------------------------------------------- the router


async def test_reports_carry_the_seconds_from_the_gates_yes() -> None:
    clock = FakeClock(100.0)
    reports: list[SubRequestEnd] = []
    s = session(clock, reports)
    ok = FakeRequest("http://a.test/api/links.json")
    lost = FakeRequest("http://a.test/api/gone", failure="net::ERR_CONNECTION_REFUSED")
    open_ = FakeRequest("http://a.test/api/hang")
    private = FakeRequest("http://a.test/private")
    image = FakeRequest("http://a.test/hero.png", resource_type="image")
    routes = {r.url: FakeRoute() for r in (ok, lost, open_, private, image)}
    clock.now = 100.25
    for r in (ok, lost, open_, private, image):
        await s.handle(cast("Route", routes[r.url]), req(r))
    assert routes[ok.url].done == ["continue"]
    assert routes[private.url].done == ["abort blockedbyclient"]
    assert routes[image.url].done == ["abort blockedbyclient"]
    assert (s.requests, s.blocked, s.skipped) == (3, [private.url], [image.url])
    clock.now = 100.5
    s.on_response(cast("Response", FakeResponse(ok, 429, {"retry-after": "7"})))
    s.on_request_done(req(ok))  # already reported: not again
    clock.now = 101.0
    s.on_request_done(req(lost))
    clock.now = 102.0
    s.end_all()
    assert reports == [
        SubRequestEnd(ok.url, "response", 429, 0.25, "7"),
        SubRequestEnd(lost.url, "no_response", None, 0.75, None),
        SubRequestEnd(open_.url, "cancelled", None, 1.75, None),
    ]
    s.end_all()
    assert len(reports) == 3  # each one once


async def test_the_main_document_is_served_once_then_navigations_are_aborted() -> None:
    s = session(FakeClock(100.0))
    s.page = cast(Any, object())  # the pool sets it once the page is open
    main = FakeRequest("http://a.test/app", resource_type="document", navigation=True)
    away = FakeRequest("http://a.test/elsewhere", resource_type="document", navigation=True)
    first, second = FakeRoute(), FakeRoute()
    await s.handle(cast("Route", first), req(main))
    await s.handle(cast("Route", second), req(away))
    assert (first.done, second.done) == (["fulfill"], ["abort aborted"])
    assert s.navigations == [away.url] and s.requests == 0


async def test_once_cut_every_new_request_is_aborted_without_asking_the_gate() -> None:
    """After the cut the page's scripts may still start requests (the DOM is read, the
    page closes): none is sent, and the gate is not asked (no politeness slot taken).
    A request left waiting in the router instead would be let through by Playwright
    when the context closes, past the gate."""
    asked: list[str] = []

    async def gate(url: str, resource_type: str) -> bool:
        asked.append(url)
        return True

    reports: list[SubRequestEnd] = []
    s = RenderSession(None, HTML, gate, reports.append, frozenset(), clock=FakeClock(100.0))
    before, after = (
        FakeRequest("http://a.test/api/tick?n=4"),
        FakeRequest("http://a.test/api/tick?n=5"),
    )
    first, second = FakeRoute(), FakeRoute()
    await s.handle(cast("Route", first), req(before))
    s.cut()
    await s.handle(cast("Route", second), req(after))
    assert (first.done, second.done) == (["continue"], ["abort aborted"])
    assert asked == [before.url] and s.requests == 1 and s.blocked == []


async def test_a_gate_that_says_yes_as_the_render_is_cut_sends_nothing() -> None:
    """The gate's yes and the cut in the same turn of the loop: the request is aborted
    unsent and reported once as ``cancelled``, so the engine frees the slot it gave."""
    answer = asyncio.Event()

    async def gate(url: str, resource_type: str) -> bool:
        await answer.wait()
        return True

    reports: list[SubRequestEnd] = []
    clock = FakeClock(100.0)
    s = RenderSession(None, HTML, gate, reports.append, frozenset(), clock=clock)
    late = FakeRequest("http://a.test/api/tick?n=5")
    route = FakeRoute()
    handling = asyncio.create_task(s.handle(cast("Route", route), req(late)))
    await turns()
    assert route.done == [] and len(s.gates) == 1
    answer.set()
    await asyncio.sleep(0)  # one turn: the gate answered yes...
    assert all(task.done() for task in s.gates)
    s.cut()  # ...and the render is cut before the router heard it
    await handling
    assert route.done == ["abort aborted"]
    assert reports == [SubRequestEnd(late.url, "cancelled", None, 0.0, None)]
    s.end_all()
    assert len(reports) == 1 and s.requests == 1
