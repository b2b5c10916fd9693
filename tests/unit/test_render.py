"""Rendering: the tests that need no server, process or console (pure logic, the store,
virtual time); the others are in ``tests/loopback/test_render.py``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawldeck.core.config import build_config
from crawldeck.core.errors import CrawldeckError
from crawldeck.core.policy.links import extract_links
from crawldeck.core.policy.shell import SCAN_BYTES, host_matches, looks_like_shell, should_render

HTML = "text/html; charset=utf-8"


# ---------------------------------------------------------------------------- detection

CRA = b"""<!doctype html><html lang="en"><head><meta charset="utf-8"/>
<link rel="icon" href="/favicon.ico"/><title>React App</title>
<script defer="defer" src="/static/js/main.8c1a2b3d.js"></script>
<link href="/static/css/main.073c9b0a.css" rel="stylesheet"></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript>
<div id="root"></div></body></html>"""

VUE = b"""<!DOCTYPE html><html lang=""><head><meta charset="utf-8">
<title>shop</title><script defer="defer" src="/js/chunk-vendors.4b8d.js"></script>
<script defer="defer" src="/js/app.91af.js"></script></head>
<body><noscript><strong>We're sorry but shop doesn't work properly without JavaScript
enabled. Please enable it to continue.</strong></noscript><div id="app"></div></body></html>"""

NEXT = b"""<!DOCTYPE html><html><head><meta charSet="utf-8"/><title>Docs</title></head>
<body><div id="__next"></div><script id="__NEXT_DATA__" type="application/json">
{"props":{"pageProps":{}},"page":"/docs","query":{},"buildId":"x1"}</script>
<script src="/_next/static/chunks/main-5b1f.js" defer=""></script></body></html>"""

NEXT_SSR = b"""<!DOCTYPE html><html><head><title>Post</title></head><body>
<div id="__next"><article><h1>Hello</h1><p>Some server-rendered text.</p>
<a href="/">Home</a></article></div>
<script id="__NEXT_DATA__" type="application/json">{"page":"/post"}</script></body></html>"""

NUXT = b"""<!doctype html><html><head><title>Store</title></head><body>
<div id="__nuxt"><div id="__layout"></div></div>
<script>window.__NUXT__=(function(a){return {layout:"default",data:[{}]}}(null));</script>
<script src="/_nuxt/runtime.8fd1.js" defer></script></body></html>"""

ANGULAR = b"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Tour</title>
<base href="/"></head><body><app-root></app-root>
<script src="runtime.6a4c.js" type="module"></script>
<script src="main.1f2b.js" type="module"></script></body></html>"""

ANGULAR_SSR = b"""<!doctype html><html><head><title>Tour</title></head><body>
<app-root ng-version="17.3.0" ng-server-context="ssr"><h1>Tour of Heroes</h1>
<nav><a href="/dashboard">Dashboard</a><a href="/heroes">Heroes</a></nav></app-root>
</body></html>"""

REACT_ROOT = b"""<!DOCTYPE html><html><head><title>Old React</title></head><body>
<div id="content"><div data-reactroot="">Loading\xe2\x80\xa6</div></div>
<script src="/bundle.js"></script></body></html>"""

GATSBY = b"""<!DOCTYPE html><html><head><title>Blog</title></head><body>
<div id="___gatsby"></div><script src="/app-7c3e.js" async></script></body></html>"""

VITE_SCRIPT_ONLY = b"""<!doctype html><html lang="en"><head><meta charset="UTF-8" />
<title>Vite App</title></head><body>
<script type="module" src="/assets/index-4f2a9c1e.js"></script></body></html>"""

INLINE_BUNDLE = (
    b"<!DOCTYPE html><html><head><title>App</title></head><body><script>"
    + b"".join(b"var m%d=function(e,t,n){t.exports=n(%d)};\n" % (i, i) for i in range(60))
    + b"</script></body></html>"
)

NOSCRIPT_ONLY = b"""<!DOCTYPE html><html><head><title>Portal</title></head><body>
<div id="content"></div>
<noscript>Please enable JavaScript to view this site.</noscript></body></html>"""

ARTICLE = b"""<!DOCTYPE html><html><head><title>Tents</title>
<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}</script>
</head><body><main><h1>Choosing a tent</h1><p>A good tent keeps you dry, warm and rested.
Look at the weight, the pole design and how it packs down. We tested twelve models over a
wet spring on the coastal trail and kept the three that held up.</p>
<a href="/tents/">All tents</a> <a href="/">Home</a></main>
<noscript><img height="1" width="1" src="https://www.facebook.com/tr?id=1&ev=PageView"></noscript>
</body></html>"""

SSR_ROOT = b"""<!DOCTYPE html><html><head><title>Shop</title></head><body>
<div id="root"><header><h1>Shop</h1></header><p>Our products, rendered on the server.</p>
<a href="/p/1">One</a></div><script src="/main.js"></script></body></html>"""

PREFIX_IDS = b"""<!DOCTYPE html><html><head><title>X</title></head><body>
<div id="rooted"></div><div id="app-shell"></div><p>Plain page text that a reader can read,
long enough to be real content rather than a loading placeholder for a script.</p>
</body></html>"""

DETECTION: list[tuple[str, bytes, str, int, str | None]] = [
    ("create-react-app", CRA, HTML, 0, "empty #root"),
    ("vue-cli", VUE, HTML, 0, "empty #app"),
    ("next.js shell", NEXT, HTML, 0, "__NEXT_DATA__"),
    ("next.js ssr, few links", NEXT_SSR, HTML, 1, "__NEXT_DATA__"),
    ("nuxt", NUXT, HTML, 0, "__NUXT__"),
    ("angular", ANGULAR, "text/html", 0, "empty <app-root>"),
    ("angular ssr, few links", ANGULAR_SSR, HTML, 2, "ng-version"),
    ("react data-reactroot", REACT_ROOT, HTML, 0, "data-reactroot"),
    ("gatsby", GATSBY, HTML, 0, "empty #___gatsby"),
    ("vite, module script only", VITE_SCRIPT_ONLY, HTML, 0, "script-only body"),
    ("inline bundle", INLINE_BUNDLE, HTML, 0, "script-only body"),
    ("noscript asks for JS", NOSCRIPT_ONLY, HTML, 0, "noscript asks for JavaScript"),
    ("xhtml", CRA, "application/xhtml+xml", 0, "empty #root"),
    # negatives
    ("article with analytics", ARTICLE, HTML, 2, None),
    ("shell with many links", CRA, HTML, 12, None),
    ("ssr root with content", SSR_ROOT, HTML, 1, None),
    ("ids that only start like a mount", PREFIX_IDS, HTML, 0, None),
    ("json, not html", b'{"id": "__NEXT_DATA__"}', "application/json", 0, None),
    ("no content type", CRA, "", 0, None),
    ("empty body", b"", HTML, 0, None),
]


@pytest.mark.parametrize(
    ("body", "content_type", "links", "expected"),
    [case[1:] for case in DETECTION],
    ids=[case[0] for case in DETECTION],
)
def test_detection_table(body: bytes, content_type: str, links: int, expected: str | None) -> None:
    assert looks_like_shell(body, content_type, links) == expected


def test_detection_link_threshold_and_scan_limit() -> None:
    assert looks_like_shell(CRA, HTML, 3) == "empty #root"
    assert looks_like_shell(CRA, HTML, 4) is None
    assert looks_like_shell(CRA, HTML, 4, max_links=4) == "empty #root"
    assert looks_like_shell(CRA, HTML, 1, max_links=0) is None
    # a signature past the scanned prefix is not seen
    late = b"<html><body><p>" + b"x" * 300_000 + b'</p><div id="root"></div></body></html>'
    assert looks_like_shell(late, HTML, 0) is None


def test_detection_on_a_large_page() -> None:
    page = ARTICLE.replace(b"</main>", b"<p>" + b"Lorem ipsum dolor sit amet. " * 8000 + b"</p>")
    assert len(page) > 200_000
    assert looks_like_shell(page, HTML, 2) is None


@settings(max_examples=50)
@given(
    head=st.sampled_from([case[1] for case in DETECTION] + [b""]),
    tail=st.one_of(st.sampled_from([case[1] for case in DETECTION]), st.binary(max_size=512)),
)
def test_detection_reads_the_first_scan_bytes_only(head: bytes, tail: bytes) -> None:
    """The work per page is bounded: what follows the first ``SCAN_BYTES`` bytes (a
    shell's markup included) never changes the answer."""
    scanned = head.ljust(SCAN_BYTES, b" ")
    assert looks_like_shell(scanned + tail, HTML, 0) == looks_like_shell(scanned, HTML, 0)


def test_host_matches() -> None:
    assert host_matches("app.example.com", ["example.com"])
    assert host_matches("app.example.com:8443", ["EXAMPLE.com."])
    assert host_matches("example.com", ["example.com"])
    assert host_matches("127.0.0.8:8080", ["127.0.0.8:8080"])
    assert host_matches("127.0.0.8:8080", ["127.0.0.8"])
    assert not host_matches("127.0.0.8:8080", ["127.0.0.8:9090"])
    assert not host_matches("badexample.com", ["example.com"])
    assert not host_matches("example.com", ["app.example.com"])
    assert not host_matches("example.com", ["", "  "])
    assert host_matches("[::1]:8080", ["[::1]"])


def test_should_render_rules() -> None:
    auto = build_config({})
    assert auto.render == "auto" and auto.render_pool_size == 2
    article_links = len(extract_links(ARTICLE, "http://a.test/", {}, "crawldeck").links)
    assert article_links == 2
    assert should_render(auto, "a.test", CRA, HTML, 0) == "empty #root"
    assert should_render(auto, "a.test", ARTICLE, HTML, article_links) is None
    assert should_render(auto, "a.test", CRA, "text/plain", 0) is None
    assert should_render(auto, "a.test", CRA, HTML, 0, nofollow=True) is None

    always = build_config({"render": "always", "render_never_hosts": ["static.a.test"]})
    assert should_render(always, "a.test", ARTICLE, HTML, 2) == "render = always"
    assert should_render(always, "x.static.a.test", CRA, HTML, 0) is None
    assert should_render(always, "a.test", b"%PDF", "application/pdf", 0) is None

    never = build_config({"render": "never", "render_hosts": ["a.test"]})
    assert should_render(never, "a.test", CRA, HTML, 0) is None

    listed = build_config({"render_hosts": ["app.test"], "render_never_hosts": ["legacy.app.test"]})
    assert should_render(listed, "www.app.test:8080", ARTICLE, HTML, 40) == "render_hosts"
    assert should_render(listed, "legacy.app.test", CRA, HTML, 0) is None
    assert should_render(listed, "other.test", CRA, HTML, 0) == "empty #root"

    picky = build_config({"render_max_links": 0})
    assert should_render(picky, "a.test", ANGULAR_SSR, HTML, 2) is None


def test_render_config_validation() -> None:
    with pytest.raises(CrawldeckError, match=r"render_block_resources.*'images'"):
        build_config({"render_block_resources": ["images"]})
    with pytest.raises(CrawldeckError, match="'render'"):
        build_config({"render": "sometimes"})
    with pytest.raises(CrawldeckError, match="render_pool_size"):
        build_config({"render_pool_size": 0})
    config = build_config({"render_block_resources": ["image", "stylesheet"]})
    assert config.render_block_resources == ("image", "stylesheet")
