"""core.policy.links, what a page says about itself (issue #13 items 4-5): its title, its
canonical URL, its frames and iframes as links, and the SimHash of its visible text."""

from __future__ import annotations

from html import escape

from hypothesis import given
from hypothesis import strategies as st
from pagekit import ARTICLE, extract

from crawldeck.core.policy.links import TITLE_MAX_CHARS
from crawldeck.core.policy.simhash import hamming, simhash64

# --- title --------------------------------------------------------------------------


def test_title_whitespace_collapsed_entities_decoded() -> None:
    got = extract("<head><title>\n  Keeping \t what&nbsp;was\r\n fetched &amp; more  </title>")
    # ASCII whitespace only: the no-break space stays (HTML Standard document.title).
    assert got.title == "Keeping what\xa0was fetched & more"


def test_first_html_title_only() -> None:
    got = extract(
        "<body><svg><g><title>icon</title></g></svg><math><title>m</title></math>"
        "<title>The page</title><title>Second</title></body>"
    )
    assert got.title == "The page"


def test_no_title_or_a_blank_one_is_none() -> None:
    assert extract("<p>text</p>").title is None
    assert extract("<title> \n\t </title><p>text</p>").title is None
    assert extract("<template><title>inert</title></template>").title is None


def test_a_huge_title_is_cut() -> None:
    words = " ".join(f"w{i}" for i in range(500_000))  # 3.4 MB
    got = extract(f"<title>{' ' * 100_000}{words}</title><p>body</p>")
    assert got.title is not None
    assert len(got.title) == TITLE_MAX_CHARS
    assert got.title == words[:TITLE_MAX_CHARS]


def test_a_title_of_exactly_the_cap_is_kept_whole() -> None:
    title = "x" * (TITLE_MAX_CHARS - 2) + " y"
    assert extract(f"<title>{title}</title>").title == title


# --- canonical ----------------------------------------------------------------------


def test_canonical_first_in_head_rel_tokens_case_insensitive() -> None:
    got = extract(
        '<head><link rel="stylesheet" href="/s.css">'
        '<link rel="canonicalish" href="/no">'
        '<link rel="alternate CANONICAL" href=" \n/the/article?id=1 ">'
        '<link rel="canonical" href="/second"></head><body><a href="/a">a</a></body>'
    )
    assert got.canonical == "/the/article?id=1"
    assert got.links == ["/a"]  # a canonical is not a link of the page


def test_canonical_absent_empty_or_in_the_body() -> None:
    assert extract("<head><title>t</title></head>").canonical is None
    assert extract('<head><link rel="canonical" href="  "></head>').canonical is None
    # No href: not a canonical link; the next one counts.
    assert extract('<link rel="canonical"><link rel="canonical" href="/b">').canonical == "/b"
    # In <body> (Google ignores those): user content cannot name the canonical URL.
    body = '<head><title>t</title></head><body><p>x</p><link rel="canonical" href="/b"></body>'
    assert extract(body).canonical is None


def test_thousands_of_canonical_tags_give_the_first() -> None:
    links = "".join(f'<link rel="canonical" href="/c/{i}">' for i in range(20_000))
    got = extract(f"<head>{links}</head><body><p>text</p></body>")
    assert got.canonical == "/c/0"


# --- frames -------------------------------------------------------------------------


def test_frameset_frames_are_links_in_order() -> None:
    got = extract(
        '<html><head><title>Docs</title></head><frameset cols="20%,80%">'
        '<frame src="nav.html" name="nav"><frameset rows="50%,50%">'
        '<frame src=" /main.html "><frame src="#self"><frame src=""><frame>'
        '</frameset><noframes><a href="/noframes">no frames</a></noframes></frameset></html>'
    )
    assert got.links == ["nav.html", "/main.html"]
    assert got.title == "Docs"
    assert got.simhash is None  # a frameset page has no body


def test_iframes_among_the_links_in_document_order() -> None:
    got = extract(
        '<body><a href="/one">1</a><iframe src="/embed/video"></iframe>'
        '<p>text</p><a href="/two">2</a><iframe src="/one"></iframe>'
        '<iframe srcdoc="<a href=/inline>x</a>"></iframe><a href="/three">3</a></body>'
    )
    assert got.links == ["/one", "/embed/video", "/two", "/three"]


def test_nofollow_drops_frames_too() -> None:
    got = extract(
        '<head><meta name="robots" content="nofollow"></head>'
        '<body><iframe src="/embed"></iframe><a href="/a">a</a></body>'
    )
    assert (got.links, got.nofollow) == ([], True)
    framed = extract(
        '<head><meta name="robots" content="none"></head><frameset><frame src="/f"></frameset>'
    )
    assert framed.links == []


@given(st.lists(st.tuples(st.sampled_from(["a", "iframe", "area", "p"]), st.integers(0, 9))))
def test_links_and_iframes_keep_document_order(elements: list[tuple[str, int]]) -> None:
    markup = []
    for tag, n in elements:
        if tag == "a":
            markup.append(f'<a href="/p{n}">{n}</a>')
        elif tag == "iframe":
            markup.append(f'<iframe src="/p{n}"></iframe>')
        elif tag == "area":
            markup.append(f'<map><area href="/p{n}"></map>')
        else:
            markup.append(f"<p>{n}</p>")
    got = extract("<body>" + "".join(markup) + "</body>")
    expected = [f"/p{n}" for tag, n in elements if tag != "p"]
    assert got.links == list(dict.fromkeys(expected))


def test_simhash_is_of_the_visible_text_only() -> None:
    hidden = (
        "<head><title>Title words</title><style>p{color:red} body{margin:0}</style>"
        "<script>var tracking = 'many script words here';</script></head><body>"
        "<noscript><p>Please enable JavaScript to read this</p></noscript>"
        "<template><p>template words never shown</p></template>"
        "<iframe src='/ad'>fallback words of the iframe</iframe>"
    )
    page = extract(f"{hidden}<p>{escape(ARTICLE)}</p><script>more()</script></body>")
    bare = extract(f"<p>{escape(ARTICLE)}</p>")
    assert page.simhash == bare.simhash == simhash64(ARTICLE)


def test_each_kind_of_hidden_text_is_left_out() -> None:
    visible = "<p>alpha beta gamma</p>"  # one feature: any other word would change it
    for hidden in (
        "<script>var words = 'in a script';</script>",
        "<style>p { content: 'words in a style' }</style>",
        "<noscript><p>words for no script</p></noscript>",
        "<template><p>words in a template</p></template>",
        "<iframe src='/f'>words of an iframe's fallback</iframe>",
    ):
        assert extract(f"<body>{hidden}{visible}</body>").simhash == simhash64(
            "alpha beta gamma"
        ), hidden
    assert extract(f"<body><div>delta</div>{visible}</body>").simhash != simhash64(
        "alpha beta gamma"
    )


def test_text_nodes_are_joined_by_a_space() -> None:
    got = extract("<div>alpha</div><div>beta</div><span>gamma</span><b>delta</b>")
    assert got.simhash == simhash64("alpha beta gamma delta")
    assert got.simhash != simhash64("alphabeta gammadelta")


def test_no_text_no_simhash() -> None:
    assert extract("").simhash is None
    assert extract("<body><img src=/i.png><script>words()</script></body>").simhash is None
    assert extract("<body> -- . ; -- </body>").simhash is None  # no word token
    assert extract("<body>one</body>").simhash == simhash64("one")


def _page(footer: str) -> str:
    return (
        f"<html><head><title>River news</title></head><body><nav><a href='/'>Home</a>"
        f"<a href='/archive'>Archive</a></nav><article><p>{escape(ARTICLE)}</p></article>"
        f"<footer><p>{escape(footer)}</p></footer></body></html>"
    )


def test_the_same_article_with_another_date_line_is_a_near_duplicate() -> None:
    a = extract(_page("Published on 3 March 2026 by the river desk. Page 1 of 1."))
    b = extract(_page("Published on 14 April 2026 by the river desk. Page 1 of 1."))
    same = extract(_page("Published on 3 March 2026 by the river desk. Page 1 of 1."))
    assert a.simhash is not None and b.simhash is not None
    assert hamming(a.simhash, b.simhash) <= 3
    assert same.simhash == a.simhash
    other = extract(_page("x").replace(escape(ARTICLE), escape(ARTICLE[::-1])))
    assert other.simhash is not None
    assert hamming(a.simhash, other.simhash) > 3


def test_deep_nesting_still_gives_the_text() -> None:
    depth = 3000
    got = extract("<div>" * depth + "deep words here" + "</div>" * depth)
    assert got.simhash == simhash64("deep words here")


def test_bytes_lexbor_cannot_make_sense_of() -> None:
    got = extract(b"\x00\xff<\x00title>\xfe\x00<p\x00>" * 1000)
    assert got.links == []
    assert got.canonical is None
