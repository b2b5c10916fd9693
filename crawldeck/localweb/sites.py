"""The content of the local web: one :class:`Site` per host, generated from the path.

Every page is built on the fly (nothing on disk) and is deterministic: its prose comes
from a random generator seeded with the host name and the path. Only the session ids of
the ``traps`` host's shop are random, on purpose.

Each site also declares its ground truth as sets of *request targets* (path with query,
e.g. ``"/search?q=tents"``): :attr:`Site.good`, :attr:`Site.files`,
:attr:`Site.disallowed`, ... :mod:`localweb.web` turns them into absolute URLs in
:class:`localweb.web.Expected`. Keeping the truth next to the generator keeps the two
in step; ``tests/loopback/test_localweb.py`` checks it against the pages by crawling them.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import random
import secrets
import threading
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from html import escape
from types import MappingProxyType

from crawldeck.localweb.server import Request, Response

__all__ = [
    "BusySite",
    "FlakySite",
    "MovedSite",
    "NoRobotsSite",
    "Site",
    "SlowSite",
    "SpaSite",
    "TrapsSite",
    "WwwSite",
    "format_seconds",
]

Link = tuple[str, str]
"""``(href as written in the page, link text)``."""

CSS = """body{font-family:Georgia,serif;max-width:46rem;margin:2rem auto;padding:0 1rem;
color:#222;line-height:1.55}header,footer{border-bottom:1px solid #ccc;padding:.5rem 0}
footer{border-top:1px solid #ccc;border-bottom:0;margin-top:2rem;font-size:.9rem}
nav ul{list-style:none;padding:0;display:flex;gap:1rem;flex-wrap:wrap}a{color:#0b5394}
"""


def format_seconds(value: float) -> str:
    """A number of seconds as robots.txt writes it: ``1.0`` -> ``"1"``, ``0.25`` -> ``"0.25"``."""
    return f"{value:g}"


# ---------------------------------------------------------------------------- prose


@dataclass(frozen=True, slots=True)
class Theme:
    """The voice of one site: its name and the words its prose is made of."""

    site_name: str
    tagline: str
    nouns: tuple[str, ...]
    adjectives: tuple[str, ...]
    verbs: tuple[str, ...]
    places: tuple[str, ...]


_TIMES = (
    "in early spring",
    "over the winter",
    "last month",
    "on most weekends",
    "after the first frost",
    "during the summer rush",
    "by the end of the season",
    "every other week",
)

_TEMPLATES = (
    "The {adj} {noun} {verb} {place}.",
    "{Time}, our {noun} {verb} better than any {adj2} {noun2} we have tried.",
    "Many readers ask whether {a_adj} {noun} {verb} {place}; in our experience it does.",
    "We recommend pairing the {noun} with {a_adj} {noun2}.",
    "{a_adj2} {noun2} rarely {verb} {place}, so plan ahead.",
    "Every {noun} described here {verb} {place} {time}.",
    "If the {noun} feels too {adj}, look at the {noun2} instead.",
    "Notes taken {place} suggest that the {noun} {verb} {time}.",
    "Nobody expected the {noun2} to be this {adj}, yet it {verb} {place}.",
    "Our staff checked the {adj} {noun} again {time} and kept it on the list.",
)


def _rng(host: str, path: str) -> random.Random:
    return random.Random(zlib.crc32(f"{host}|{path}".encode()))


def _with_article(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _sentence(rng: random.Random, theme: Theme) -> str:
    noun, noun2 = rng.sample(theme.nouns, 2)
    adj, adj2 = rng.sample(theme.adjectives, 2)
    time_phrase = rng.choice(_TIMES)
    text = rng.choice(_TEMPLATES).format(
        noun=noun,
        noun2=noun2,
        adj=adj,
        adj2=adj2,
        a_adj=_with_article(adj),
        a_adj2=_with_article(adj2),
        verb=rng.choice(theme.verbs),
        place=rng.choice(theme.places),
        time=time_phrase,
        Time=time_phrase[0].upper() + time_phrase[1:],
    )
    return text[0].upper() + text[1:]


def prose(host: str, path: str, theme: Theme, paragraphs: int = 3) -> str:
    """Deterministic paragraphs of HTML (``<p>...</p>`` lines) for ``host`` + ``path``."""
    rng = _rng(host, path)
    out = []
    for _ in range(paragraphs):
        sentences = [_sentence(rng, theme) for _ in range(rng.randint(3, 5))]
        out.append(f"<p>{escape(' '.join(sentences))}</p>")
    return "\n".join(out)


def title_of(slug: str) -> str:
    """``"pitching-in-wind"`` -> ``"Pitching in wind"``."""
    words = slug.removesuffix(".html").replace("-", " ").strip()
    return words[:1].upper() + words[1:]


def link_list(links: Sequence[Link], rel: Mapping[str, str] | None = None) -> str:
    """An HTML ``<ul>`` of links; ``rel`` maps an href to its ``rel`` attribute value."""
    items = []
    for href, text in links:
        rel_attr = f' rel="{escape(rel[href])}"' if rel and href in rel else ""
        items.append(f'<li><a href="{escape(href)}"{rel_attr}>{escape(text)}</a></li>')
    return "<ul>\n" + "\n".join(items) + "\n</ul>"


def layout(
    *,
    theme: Theme,
    title: str,
    body: str,
    nav: Sequence[Link],
    www_home: str,
    head_extra: str = "",
) -> str:
    """A complete HTML document: doctype, head with title, header nav, main, footer.

    The footer links to ``www_home`` (every page of every host links back to it).
    """
    nav_html = "".join(f'<li><a href="{escape(h)}">{escape(t)}</a></li>' for h, t in nav)
    full_title = title if title == theme.site_name else f"{title} | {theme.site_name}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(full_title)}</title>\n"
        f'<meta name="description" content="{escape(theme.tagline)}">\n'
        f"{head_extra}"
        '<link rel="stylesheet" href="/style.css">\n</head>\n<body>\n'
        f'<header><p class="brand">{escape(theme.site_name)}</p>\n'
        f"<nav><ul>{nav_html}</ul></nav></header>\n"
        f"<main>\n<h1>{escape(title)}</h1>\n{body}\n</main>\n"
        f'<footer><p>{escape(theme.tagline)}. Part of <a href="{escape(www_home)}">'
        "the local web</a>.</p></footer>\n</body>\n</html>\n"
    )


# ---------------------------------------------------------------------------- sites


@dataclass(slots=True)
class Page:
    """A page of a site: its title, prose seed, links and extras."""

    title: str
    links: list[Link] = field(default_factory=list)
    intro: str = ""
    head_extra: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    rel: dict[str, str] = field(default_factory=dict)
    paragraphs: int = 3
    seed: str = ""
    """The path whose prose the page shows (empty: its own path); two paths with equal
    pages and the same seed serve the same bytes."""


class Site:
    """One host's content: answers requests and declares its ground truth.

    Subclasses fill :attr:`pages` (path -> :class:`Page`) and may override
    :meth:`route` for dynamic paths and :meth:`robots` for ``/robots.txt``. The ground
    truth sets hold request targets (path with query):

    - :attr:`good`: HTML pages a correct crawler (token ``crawldeck``, default limits)
      must fetch; each reachable within depth 5 of the seeds.
    - :attr:`files`: non-HTML resources a correct crawler must fetch.
    - :attr:`disallowed`: targets a naive crawler finds that robots.txt forbids to
      ``crawldeck``.
    - :attr:`disallowed_other_agents`: targets allowed to ``crawldeck`` but forbidden to
      other agents (the ``*`` group).
    - :attr:`nofollow`: targets linked only through ``rel=nofollow`` or a page with
      ``<meta name="robots" content="nofollow">``.
    - :attr:`noindex`: good pages answered with ``X-Robots-Tag: noindex``.
    - :attr:`wrong_base`: targets a crawler ignoring ``<base href>`` would request (404).
    """

    name = ""
    theme: Theme

    def __init__(self, base: str, www_home: str) -> None:
        """Create the site served at ``base`` (``http://address:port``).

        Args:
            base: this host's base URL without a trailing slash.
            www_home: the absolute URL of the ``www`` home page (linked from every page).
        """
        self.base = base
        self.www_home = www_home
        self.pages: dict[str, Page] = {}
        self.nav: list[Link] = [("/", "Home")]
        self.good: set[str] = set()
        self.files: set[str] = set()
        self.disallowed: set[str] = set()
        self.disallowed_other_agents: set[str] = set()
        self.nofollow: set[str] = set()
        self.noindex: set[str] = set()
        self.wrong_base: set[str] = set()

    def robots(self, request: Request) -> Response:
        """The answer to ``/robots.txt`` (default: allow everything)."""
        return Response.text("User-agent: *\nDisallow:\n")

    def route(self, request: Request) -> Response | None:
        """Answer a path that is not in :attr:`pages`; ``None`` means 404."""
        return None

    def __call__(self, request: Request) -> Response:
        """Answer ``request`` (the :data:`localweb.server.Handler` of this host)."""
        if request.path == "/robots.txt":
            return self.robots(request)
        if request.path == "/style.css":
            return Response.text(CSS, content_type="text/css")
        page = self.pages.get(request.path)
        if page is not None:
            return self.render(request.path, page)
        return self.route(request) or Response.error(404)

    def render(self, path: str, page: Page, status: int = 200) -> Response:
        """The HTML response of ``page`` at ``path``."""
        body = page.intro + prose(self.name, page.seed or path, self.theme, page.paragraphs)
        if page.links:
            body += "\n<h2>See also</h2>\n" + link_list(page.links, page.rel)
        text = layout(
            theme=self.theme,
            title=page.title,
            body=body,
            nav=self.nav,
            www_home=self.www_home,
            head_extra=page.head_extra,
        )
        return Response.html(text, status, page.headers)

    def title_for(self, path: str) -> str:
        """The title of an item page from its path's last segment (see :func:`title_of`)."""
        return title_of(path.rstrip("/").rsplit("/", 1)[-1])

    def add_sections(
        self, home_title: str, sections: Sequence[tuple[str, str, Sequence[str]]]
    ) -> None:
        """Build a home page and sections of item pages, all good.

        Args:
            home_title: the home page's title.
            sections: ``(index path, index title, item paths)``; the index links every
                item, each item links its neighbours and its index.
        """
        home_links: list[Link] = []
        for index, index_title, items in sections:
            self.nav.append((index, index_title))
            item_links = [(item, self.title_for(item)) for item in items]
            self.pages[index] = Page(index_title, list(item_links))
            home_links.append((index, index_title))
            home_links.extend(item_links[:2])
            for i, (item, title) in enumerate(item_links):
                neighbours = [item_links[(i + 1) % len(item_links)], item_links[i - 1]]
                others = dict.fromkeys(n for n in neighbours if n[0] != item)
                links = [*others, (index, index_title)]
                self.pages[item] = Page(title, links)
        if "/" not in self.pages:
            self.pages["/"] = Page(home_title, home_links, paragraphs=2)
        else:
            self.pages["/"].links.extend(home_links)
        self.good.update(self.pages)


_WWW = Theme(
    "Harbor & Pine Outfitters",
    "Outdoor gear, repairs and trail guides since 1987",
    (
        "tent", "backpack", "camp stove", "rain jacket", "sleeping bag", "canoe",
        "trail map", "headlamp", "water filter", "hiking boot", "trekking pole", "tarp",
    ),
    (
        "lightweight", "waterproof", "rugged", "compact", "insulated", "breathable",
        "repairable", "affordable", "quiet", "sturdy",
    ),
    (
        "holds up", "performs well", "dries quickly", "packs down small", "stays warm",
        "survives the rain", "earns its place", "needs little care",
    ),
    (
        "on the coastal trail", "above the tree line", "in the river valley",
        "at the north campsite", "on long portages", "in our repair shop",
    ),
)  # fmt: skip

_TRAPS = Theme(
    "Trap Gallery",
    "A museum of the places where crawlers get lost",
    ("calendar", "session id", "catalogue", "redirect", "page counter", "link", "path"),
    ("endless", "recursive", "generated", "infinite", "sticky", "misleading"),
    ("grows forever", "repeats itself", "points back", "never ends", "multiplies"),
    ("in the archive", "behind every link", "at the bottom of the page", "in the query"),
)

_NOROBOTS = Theme(
    "Field Notes",
    "A birdwatcher's notebook from the estuary",
    ("heron", "curlew", "kingfisher", "warbler", "lapwing", "sandpiper", "telescope",
     "notebook", "hide", "tide table"),
    ("elusive", "early", "patient", "muddy", "bright", "restless", "distant", "quiet"),
    ("appears", "feeds", "calls", "waits", "returns", "lands", "roosts"),
    ("on the mudflats", "near the old sluice", "by the reed beds", "along the sea wall"),
)  # fmt: skip

_FLAKY = Theme(
    "Pantry Wiki",
    "Community recipes, tested in ordinary kitchens",
    ("sourdough", "lentil soup", "tart", "stew", "dumpling", "pickle", "flatbread",
     "custard", "risotto", "chutney"),
    ("crisp", "silky", "smoky", "tangy", "hearty", "fragrant", "simple", "rich"),
    ("rests overnight", "bakes evenly", "keeps for a week", "freezes well", "feeds six"),
    ("in a cast-iron pan", "on a low flame", "in the oven", "at room temperature"),
)  # fmt: skip

_MOVED = Theme(
    "Riverside Museum",
    "Local history, boats and bridges of the lower river",
    ("ferry", "lock gate", "barge", "ledger", "lantern", "bridge model", "map",
     "photograph", "tide bell", "rope"),
    ("restored", "fragile", "painted", "original", "weathered", "rare", "donated"),
    ("hangs", "returns", "tells its story", "survives", "draws visitors", "rests"),
    ("in the east gallery", "by the old quay", "in the archive room", "near the entrance"),
)  # fmt: skip

_BUSY = Theme(
    "Box Office",
    "Tickets for concerts, plays and talks in the city",
    ("concert", "matinee", "quartet", "lecture", "premiere", "encore", "season pass",
     "balcony seat", "rehearsal", "festival"),
    ("sold-out", "intimate", "late", "family", "acoustic", "open-air", "popular"),
    ("starts on time", "sells quickly", "runs two hours", "opens the season", "tours"),
    ("in the main hall", "at the riverside stage", "in the studio theatre", "downtown"),
)  # fmt: skip

_SLOW = Theme(
    "County Records Archive",
    "Parish registers, maps and deeds, digitised slowly",
    ("register", "deed", "survey", "census", "letter", "plan", "map", "ledger"),
    ("handwritten", "faded", "bound", "indexed", "complete", "partial"),
    ("is indexed", "was scanned", "awaits transcription", "is catalogued"),
    ("in the strong room", "in box 14", "on microfilm", "in the reading room"),
)


class WwwSite(Site):
    """``www``: a company site with every robots.txt and link-extraction subtlety.

    robots.txt has a ``*`` group (``Disallow: /private/``, ``Allow: /private/open$``,
    ``Disallow: /*.pdf$``, ``Disallow: /search``) and a ``crawldeck`` group that differs
    (no ``/search`` rule, but ``Disallow: /drafts/``); both carry the Crawl-delay.
    """

    name = "www"
    theme = _WWW

    NEWS = (
        "new-repair-workshop", "winter-opening-hours", "canoe-rental-returns",
        "trail-cleanup-report", "gear-library-launch", "staff-picks-autumn",
        "recycled-down-program", "lantern-recall-notice",
    )  # fmt: skip
    GUIDES = (
        "pitching-in-wind", "layering-for-cold", "choosing-a-stove", "waxing-boots",
        "packing-light", "treating-water", "reading-contours", "canoe-portage-basics",
    )  # fmt: skip
    TEAM = ("ada-moreno", "ben-okafor", "chloe-tran", "dmitri-vogel", "erin-walsh")
    """Team member slugs; their pages are titled with the capitalised name."""

    def __init__(
        self, base: str, www_home: str, others: Mapping[str, str], crawl_delay: str
    ) -> None:
        """Create the site.

        Args:
            base: this host's base URL.
            www_home: this host's home page URL.
            others: host name -> home page URL of every other host (linked from home).
            crawl_delay: the Crawl-delay value written in robots.txt, e.g. ``"1"``.
        """
        super().__init__(base, www_home)
        self.crawl_delay = crawl_delay
        news = [f"/news/{slug}.html" for slug in self.NEWS]
        guides = [f"/guides/{slug}/" for slug in self.GUIDES]
        team = [f"/team/{slug}.html" for slug in self.TEAM]
        self.add_sections(
            "Harbor & Pine Outfitters",
            [("/news/", "News", news), ("/guides/", "Guides", guides), ("/team/", "Team", team)],
        )
        # cross-links between sections, deterministic
        for i, item in enumerate(news):
            self.pages[item].links.append((guides[i % len(guides)], title_of(self.GUIDES[i])))
        for i, item in enumerate(guides):
            self.pages[item].links.append(
                (team[i % len(team)], self.title_for(team[i % len(team)]))
            )
            # a relative link: ../<other guide>/
            other = self.GUIDES[(i + 3) % len(self.GUIDES)]
            self.pages[item].links.append((f"../{other}/", title_of(other)))
        for i, item in enumerate(team):
            self.pages[item].links.append((f"../news/{self.NEWS[i]}.html", title_of(self.NEWS[i])))
        self.nav += [("/about/", "About"), ("/files/", "Downloads")]
        pages = self.pages
        pages["/about/"] = Page(
            "About us",
            [("/careers/", "Careers"), ("/contact/", "Contact"),
             ("/private/board-minutes.html", "Board minutes (staff)")],
        )  # fmt: skip
        pages["/careers/"] = Page("Careers", [("/about/", "About us"), ("/team/", "Team")])
        pages["/contact/"] = Page(
            "Contact",
            [("/about/", "About us"), ("/account/register", "Create an account")],
            rel={"/account/register": "noopener nofollow"},
        )
        pages["/files/"] = Page(
            "Downloads",
            [("/files/data.csv", "Stock levels (CSV)"), ("/files/logo.png", "Logo (PNG)"),
             ("/files/notes.txt", "Release notes (text)"),
             ("/files/report.pdf", "Annual report (PDF)"),
             ("/files/report.pdf?download=1", "Annual report, download link")],
        )  # fmt: skip
        pages["/private/open"] = Page(
            "An open letter to our members",
            [("/private/open/archive.html", "Earlier letters")],
        )
        pages["/archive/"] = Page(
            "Archive (not followed)",
            [("/archive/old-catalogue.html", "Old catalogue"),
             ("/archive/retired-tents.html", "Retired tents")],
            head_extra='<meta name="robots" content="nofollow">\n',
        )  # fmt: skip
        pages["/press/"] = Page(
            "Press room", [("/press/kit.html", "Press kit")], headers=[("X-Robots-Tag", "noindex")]
        )
        pages["/press/kit.html"] = Page("Press kit", [("/press/", "Press room")])
        pages["/reading/list.html"] = Page(
            "Reading list",
            [("intro.html", "Introduction"), ("chapter-1.html", "Chapter 1: Shelter"),
             ("chapter-2.html", "Chapter 2: Water")],
            head_extra='<base href="/library/shelf/">\n',
        )  # fmt: skip
        for slug, title in (
            ("intro", "Introduction"),
            ("chapter-1", "Chapter 1: Shelter"),
            ("chapter-2", "Chapter 2: Water"),
        ):
            pages[f"/library/shelf/{slug}.html"] = Page(
                title, [("/reading/list.html", "Reading list")]
            )
        self.good.update(
            {"/about/", "/careers/", "/contact/", "/files/", "/private/open", "/archive/",
             "/press/", "/press/kit.html", "/reading/list.html", "/library/shelf/intro.html",
             "/library/shelf/chapter-1.html", "/library/shelf/chapter-2.html",
             "/search?q=tents"}
        )  # fmt: skip
        self.noindex.add("/press/")
        self.wrong_base.update(
            {"/reading/intro.html", "/reading/chapter-1.html", "/reading/chapter-2.html"}
        )
        # pages that exist but must not be fetched
        forbidden = {
            "/private/payroll.html": "Payroll",
            "/private/board-minutes.html": "Board minutes",
            "/private/open/archive.html": "Earlier letters",
            "/drafts/spring-launch.html": "Spring launch (draft)",
            "/archive/old-catalogue.html": "Old catalogue",
            "/archive/retired-tents.html": "Retired tents",
            "/account/login": "Sign in",
            "/account/register": "Create an account",
        }
        for path, title in forbidden.items():
            pages[path] = Page(title, [("/", "Home")], paragraphs=1)
        pages["/drafts/"] = Page("Drafts", [("/drafts/spring-launch.html", "Spring launch")])
        self.disallowed.update(
            {"/private/payroll.html", "/private/board-minutes.html", "/private/open/archive.html",
             "/drafts/", "/drafts/spring-launch.html", "/files/report.pdf"}
        )  # fmt: skip
        self.disallowed_other_agents.add("/search?q=tents")
        self.nofollow.update(
            {"/archive/old-catalogue.html", "/archive/retired-tents.html", "/account/login",
             "/account/register"}
        )  # fmt: skip
        self.files.update(
            {
                "/files/data.csv",
                "/files/logo.png",
                "/files/notes.txt",
                "/files/report.pdf?download=1",
            }
        )
        home = pages["/"]
        home.links += [
            ("/about/", "About us"), ("/files/", "Downloads"), ("/private/open", "Open letter"),
            ("/private/payroll.html", "Payroll (staff only)"), ("/drafts/", "Drafts"),
            ("/search?q=tents", "Search for tents"), ("/archive/", "Archive"),
            ("/press/", "Press room"), ("/reading/list.html", "Reading list"),
            ("/account/login", "Sign in"),
        ]  # fmt: skip
        home.rel["/account/login"] = "nofollow"
        home.links += [(url, f"Visit {name}") for name, url in others.items()]
        home.intro = f"<p><strong>{escape(self.theme.tagline)}.</strong></p>\n"

    def title_for(self, path: str) -> str:
        """Team pages are titled with the person's name, capitalised."""
        if path.startswith("/team/"):
            return path.removeprefix("/team/").removesuffix(".html").replace("-", " ").title()
        return super().title_for(path)

    def robots(self, request: Request) -> Response:
        """Two groups; the ``crawldeck`` one differs from ``*`` (see the class docstring)."""
        return Response.text(
            "# Harbor & Pine robots policy\n"
            "User-agent: *\n"
            "Disallow: /private/\n"
            "Allow: /private/open$\n"
            "Disallow: /*.pdf$\n"
            "Disallow: /search\n"
            f"Crawl-delay: {self.crawl_delay}\n"
            "\n"
            "User-agent: crawldeck\n"
            "Disallow: /private/\n"
            "Allow: /private/open$\n"
            "Disallow: /*.pdf$\n"
            "Disallow: /drafts/\n"
            f"Crawl-delay: {self.crawl_delay}\n"
        )

    def route(self, request: Request) -> Response | None:
        """``/search?q=...`` and the files under ``/files/``."""
        if request.path == "/search":
            query = (request.query.get("q") or [""])[0]
            guides = [f"/guides/{slug}/" for slug in self.GUIDES[:3]]
            page = Page(
                f"Search results for \u201c{query}\u201d",
                [(g, title_of(g.strip("/").rsplit("/", 1)[-1])) for g in guides],
                paragraphs=1,
            )
            return self.render(request.path + "?q=" + query, page)
        found = _FILES.get(request.path)
        return replace(found, headers=list(found.headers)) if found is not None else None


def _png_1x1() -> bytes:
    """A valid 1x1 transparent PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data).to_bytes(4, "big")
        return len(data).to_bytes(4, "big") + kind + data + crc

    header = (1).to_bytes(4, "big") * 2 + bytes([8, 6, 0, 0, 0])
    pixels = zlib.compress(b"\x00\x00\x00\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _pdf() -> bytes:
    """A tiny one-page PDF."""
    return (
        b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
        b"2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
        b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\n"
        b"trailer<</Root 1 0 R>>\n%%EOF\n"
    )


_FILES: dict[str, Response] = {
    "/files/data.csv": Response(
        200,
        b"sku,name,stock\nT-100,Ridge tent,14\nB-220,Daypack 22,31\nS-010,Camp stove,7\n",
        "text/csv; charset=utf-8",
    ),
    "/files/logo.png": Response(200, _png_1x1(), "image/png"),
    "/files/notes.txt": Response(
        200,
        b"Release notes\n=============\n\n- New repair workshop hours.\n",
        "text/plain; charset=utf-8",
    ),
    "/files/report.pdf": Response(200, _pdf(), "application/pdf"),
}


class TrapsSite(Site):
    """``traps``: calendar, session ids, repeating path, redirect loop and chain,
    pagination and an over-long URL. Allows everything in robots.txt."""

    name = "traps"
    theme = _TRAPS
    PRODUCTS = 6
    """How many products the shop has (``/shop/product/1`` .. ``/shop/product/6``)."""
    CHAIN_HOPS = 25
    """Redirects from ``/chain/1`` to ``/chain/final``."""
    LONG_URL_TOKEN_CHARS = 2200
    """Length of the ``token`` parameter of the over-long URL."""

    def __init__(self, base: str, www_home: str, today: datetime.date) -> None:
        """Create the site; ``today`` is the calendar trap's starting month."""
        super().__init__(base, www_home)
        self.today = today
        token = hashlib.sha256(b"localweb").hexdigest()
        token = (token * (self.LONG_URL_TOKEN_CHARS // len(token) + 1))[: self.LONG_URL_TOKEN_CHARS]
        self.long_target = f"/long/landing?campaign=spring&token={token}"
        self.entries: dict[str, str] = {
            "calendar": f"/calendar/{today.year:04d}/{today.month:02d}/",
            "session": "/shop/",
            "session_phpsessid": "/shop/cart",
            "repeat": "/repeat/",
            "redirect_loop": "/loop/a",
            "redirect_chain": "/chain/1",
            "pagination": "/list?page=1",
            "long_url": "/long/",
        }
        self.pages["/"] = Page(
            "Trap gallery",
            [
                (self.entries["calendar"], "Events calendar"),
                ("/repeat/", "Nested folders"),
                ("/loop/a", "A page that moved (loop)"),
                ("/chain/1", "A page that moved many times"),
                ("/list?page=1", "All items, paged"),
                ("/long/", "Campaign landing"),
            ],
        )
        self.pages["/long/"] = Page("Campaign", [(self.long_target, "Landing page")])
        self.pages["/long/landing"] = Page("Landing page", paragraphs=1)
        self.pages["/chain/final"] = Page("The end of the chain", paragraphs=1)
        self.good.update({"/", "/long/", self.entries["calendar"], "/shop/", "/shop/cart",
                          "/repeat/", "/list?page=1"})  # fmt: skip
        self.good.update(f"/shop/product/{n}" for n in range(1, self.PRODUCTS + 1))

    @staticmethod
    def sid() -> str:
        """A fresh random session id (16 hex digits)."""
        return secrets.token_hex(8)

    def __call__(self, request: Request) -> Response:
        """Answer ``request``; the home page gains fresh session links each time."""
        if request.path == "/":
            page = self.pages["/"]
            shop = [
                (f"/shop/?sid={self.sid()}", "Shop"),
                (f"/shop/cart?PHPSESSID={self.sid()}", "Your cart"),
            ]
            return self.render("/", Page(page.title, shop + page.links))
        return super().__call__(request)

    def route(self, request: Request) -> Response | None:
        """The generated trap pages and redirects."""
        path = request.path
        parts = path.strip("/").split("/")
        if path.startswith("/calendar/") and len(parts) == 3 and path.endswith("/"):
            return self._calendar(parts[1], parts[2])
        if path.startswith("/repeat/") and set(parts[1:]) <= {"a"} and path.endswith("/"):
            return self._repeat(path, len(parts) - 1)
        if path == "/shop/" or path == "/shop/cart" or path.startswith("/shop/product/"):
            return self._shop(path)
        if path == "/loop/a":
            return Response.redirect("/loop/b")
        if path == "/loop/b":
            return Response.redirect("/loop/a")
        if path.startswith("/chain/") and parts[1].isdigit():
            n = int(parts[1])
            if 1 <= n < self.CHAIN_HOPS:
                return Response.redirect(f"/chain/{n + 1}")
            if n == self.CHAIN_HOPS:
                return Response.redirect("/chain/final")
        if path == "/list":
            return self._list(request)
        return None

    def _calendar(self, year_s: str, month_s: str) -> Response | None:
        if not (year_s.isdigit() and month_s.isdigit() and len(year_s) == 4 and len(month_s) == 2):
            return None
        year, month = int(year_s), int(month_s)
        if not (1 <= year <= 9999 and 1 <= month <= 12):
            return None

        start = (self.today.year, self.today.month)

        def href(y: int, m: int) -> str | None:
            # An events calendar: it starts at the current month and runs forward forever.
            y, m = y + (m - 1) // 12, (m - 1) % 12 + 1
            return f"/calendar/{y:04d}/{m:02d}/" if start <= (y, m) and y <= 9999 else None

        candidates = [
            (href(year, month - 1), "\u2039 Previous month"),
            (href(year, month + 1), "Next month \u203a"),
            (href(year - 1, month), "\u00ab Previous year"),
            (href(year + 1, month), "Next year \u00bb"),
        ]
        links = [(h, t) for h, t in candidates if h is not None]
        name = datetime.date(year, month, 1).strftime("%B %Y")
        days = "".join(f"<li>{d}: no events</li>" for d in (1, 8, 15, 22))
        page = Page(f"Events in {name}", links, intro=f"<ul>{days}</ul>\n", paragraphs=1)
        return self.render(f"/calendar/{year:04d}/{month:02d}/", page)

    def _repeat(self, path: str, level: int) -> Response:
        page = Page(f"Folder, level {level}", [("./a/", "Open the subfolder")], paragraphs=1)
        return self.render(path, page)

    def _shop(self, path: str) -> Response | None:
        n_products = self.PRODUCTS
        if path == "/shop/":
            first, title, self_link = 1, "Shop", f"/shop/?sid={self.sid()}"
        elif path == "/shop/cart":
            first, title, self_link = 4, "Your cart", f"/shop/cart?PHPSESSID={self.sid()}"
        else:
            n_s = path.removeprefix("/shop/product/")
            if not n_s.isdigit() or not 1 <= int(n_s) <= n_products:
                return None
            n = int(n_s)
            first, title, self_link = n % n_products + 1, f"Product {n}", f"{path}?sid={self.sid()}"
        links: list[Link] = [(self_link, "This page")]
        for k in range(3):
            p = (first - 1 + k) % n_products + 1
            links.append((f"/shop/product/{p}?sid={self.sid()}", f"Product {p}"))
        links.append((f"/shop/cart?PHPSESSID={self.sid()}", "Your cart"))
        return self.render(path, Page(title, links, paragraphs=1))

    def _list(self, request: Request) -> Response | None:
        raw = (request.query.get("page") or ["1"])[0]
        if not raw.isdigit() or int(raw) < 1 or len(raw) > 30:
            return None
        page_n = int(raw)
        # Only a x10 jump: the trap passes max_page_param in four hops without
        # flooding a crawl with the ordinary pages in between.
        links: list[Link] = [(f"/list?page={page_n * 10}", f"Jump to page {page_n * 10}")]
        first = (page_n - 1) * 10 + 1
        items = "".join(f"<li>Item {k}</li>" for k in range(first, first + 10))
        page = Page(f"All items, page {page_n}", links, intro=f"<ol>{items}</ol>\n", paragraphs=1)
        return self.render(f"/list?page={page_n}", page)


class NoRobotsSite(Site):
    """``norobots``: ``/robots.txt`` answers 404 (allow all); a dozen pages."""

    name = "norobots"
    theme = _NOROBOTS

    def __init__(self, base: str, www_home: str) -> None:
        """Create the site."""
        super().__init__(base, www_home)
        posts = (
            "first-curlew-of-autumn", "herons-at-dawn", "a-kingfisher-at-last",
            "counting-lapwings", "the-new-hide", "storm-watch", "spring-warblers",
            "notes-on-tides",
        )  # fmt: skip
        self.add_sections(
            "Field Notes",
            [
                ("/posts/", "Posts", [f"/posts/{p}/" for p in posts]),
                ("/about/", "About", ["/about/colophon.html"]),
            ],
        )

    def robots(self, request: Request) -> Response:
        """404: there is no robots.txt."""
        return Response.error(404)


class FlakySite(Site):
    """``flaky``: ``/robots.txt`` answers 503 every time; a dozen pages."""

    name = "flaky"
    theme = _FLAKY

    def __init__(self, base: str, www_home: str) -> None:
        """Create the site."""
        super().__init__(base, www_home)
        recipes = (
            "overnight-sourdough", "red-lentil-soup", "plum-tart", "bean-stew",
            "pork-dumplings", "quick-pickles", "skillet-flatbread", "vanilla-custard",
        )  # fmt: skip
        self.add_sections(
            "Pantry Wiki",
            [
                ("/recipes/", "Recipes", [f"/recipes/{r}" for r in recipes]),
                ("/about/", "About", ["/about/ingredients"]),
            ],
        )

    def robots(self, request: Request) -> Response:
        """503, always."""
        return Response.error(503)


class MovedSite(Site):
    """``moved``: ``/robots.txt`` answers 301 to ``/real-robots.txt``, which disallows
    ``/hidden/``; some pages link into ``/hidden/``.

    Its ``/collection/`` (linked from the home page) holds what a crawler that keeps
    pages must tell apart (issue #13): an exact duplicate (the same bytes under two
    URLs, :attr:`DUPLICATES`), near duplicates (the same long article with another
    "last revised" line, and a print view with the same text, :attr:`NEAR_DUPLICATES`),
    a print view whose ``<link rel="canonical">`` names the article
    (:attr:`CANONICAL`), and pages reachable only as frames: the two frames of a
    ``<frameset>`` page and the ``<iframe>`` of the index (:attr:`FRAMED`).
    """

    name = "moved"
    theme = _MOVED
    DUPLICATES: tuple[tuple[str, str], ...] = (
        ("/collection/ledger.html", "/collection/ledger-copy.html"),
    )
    """Pairs of paths that serve the same bytes."""
    NEAR_DUPLICATES: tuple[tuple[str, str], ...] = (
        ("/collection/ferry-1931.html", "/collection/ferry-1931-revised.html"),
        ("/collection/barge.html", "/collection/barge-print.html"),
    )
    """Pairs of paths whose bytes differ but whose text SimHashes are within 3 bits
    (``tests/loopback/test_links_localweb.py`` checks it)."""
    CANONICAL: Mapping[str, str] = MappingProxyType(
        {"/collection/barge-print.html": "/collection/barge.html"}
    )
    """Path -> the path its ``<link rel="canonical">`` names."""
    FRAMED: frozenset[str] = frozenset(
        {"/collection/frame-nav.html", "/collection/frame-main.html", "/collection/map.html"}
    )
    """Paths linked only by ``<frame src>`` or ``<iframe src>``."""
    FRAMESET = "/collection/frames.html"
    """The ``<frameset>`` page (its frames: ``frame-nav.html``, ``frame-main.html``)."""

    def __init__(self, base: str, www_home: str) -> None:
        """Create the site."""
        super().__init__(base, www_home)
        exhibits = (
            "the-last-ferry", "lock-keepers-ledger", "painted-barges", "bridge-models",
            "river-at-night", "rope-makers", "the-tide-bell",
        )  # fmt: skip
        self.add_sections(
            "Riverside Museum",
            [
                ("/exhibits/", "Exhibits", [f"/exhibits/{e}.html" for e in exhibits]),
                ("/visit/", "Visit", ["/visit/opening-hours.html", "/visit/getting-here.html"]),
            ],
        )
        hidden = {"/hidden/vault.html": "The vault", "/hidden/staff-only.html": "Staff only"}
        for path, title in hidden.items():
            self.pages[path] = Page(title, [("/", "Home")], paragraphs=1)
            self.disallowed.add(path)
        self.pages["/"].links.append(("/hidden/vault.html", "The vault"))
        self.pages["/visit/"].links.append(("/hidden/staff-only.html", "Staff entrance"))
        self._add_collection()

    def _add_collection(self) -> None:
        """The ``/collection/`` pages (class docstring)."""
        index = "/collection/"
        back = [(index, "The collection")]
        ledger = Page("The harbour ledger", list(back), seed="/collection/ledger.html")
        article = "/collection/ferry-1931.html"
        revised = "<p>Last revised on {} by the museum staff.</p>\n"
        barge = Page("The painted barge", list(back), seed="/collection/barge.html")
        pages = {
            "/collection/ledger.html": ledger,
            "/collection/ledger-copy.html": ledger,
            article: Page(
                "The last ferry of 1931",
                list(back),
                intro=revised.format("3 March 2026"),
                paragraphs=12,
                seed=article,
            ),
            "/collection/ferry-1931-revised.html": Page(
                "The last ferry of 1931",
                list(back),
                intro=revised.format("14 April 2026"),
                paragraphs=12,
                seed=article,
            ),
            "/collection/barge.html": barge,
            "/collection/barge-print.html": replace(
                barge,
                head_extra='<link rel="canonical" href="/collection/barge.html">\n',
            ),
            "/collection/frame-nav.html": Page("Collection contents", list(back), paragraphs=1),
            "/collection/frame-main.html": Page("Collection notes", list(back)),
            "/collection/map.html": Page("Map of the galleries", [], paragraphs=1),
        }
        listed = [path for path in pages if path not in self.FRAMED]
        self.pages[index] = Page(
            "The collection",
            [(path, pages[path].title) for path in listed] + [(self.FRAMESET, "Framed view")],
            intro='<iframe src="/collection/map.html" title="Map"></iframe>\n',
        )
        self.pages.update(pages)
        self.pages["/"].links.append((index, "The collection"))
        self.good.update({index, self.FRAMESET, *pages})

    def robots(self, request: Request) -> Response:
        """301 to the absolute URL of ``/real-robots.txt``."""
        return Response.redirect(f"{self.base}/real-robots.txt", 301)

    def route(self, request: Request) -> Response | None:
        """``/real-robots.txt``: ``Disallow: /hidden/``; the ``<frameset>`` page."""
        if request.path == "/real-robots.txt":
            return Response.text("User-agent: *\nDisallow: /hidden/\n")
        if request.path == self.FRAMESET:
            return Response.html(
                '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
                f"<title>Framed view | {escape(self.theme.site_name)}</title>\n</head>\n"
                '<frameset cols="25%,75%">\n<frame src="/collection/frame-nav.html">\n'
                '<frame src="/collection/frame-main.html">\n<noframes><p><a href="'
                f'{escape(self.www_home)}">The local web</a></p></noframes>\n'
                "</frameset>\n</html>\n"
            )
        return None


class BusySite(Site):
    """``busy``: the first ``busy_429_count`` requests other than ``/robots.txt`` answer
    429 with ``Retry-After``; then 200 for everything. A dozen pages."""

    name = "busy"
    theme = _BUSY

    def __init__(self, base: str, www_home: str, busy_429_count: int, retry_after_s: int) -> None:
        """Create the site.

        Args:
            base: this host's base URL.
            www_home: the ``www`` home page URL.
            busy_429_count: how many requests (robots.txt excluded) answer 429.
            retry_after_s: the ``Retry-After`` value, whole seconds.
        """
        super().__init__(base, www_home)
        self._lock = threading.Lock()
        self._left = busy_429_count
        self.retry_after_s = retry_after_s
        events = (
            "spring-quartet", "harbour-lights-premiere", "sunday-matinee", "jazz-at-nine",
            "lecture-on-bridges", "family-festival", "choir-encore", "late-night-comedy",
        )  # fmt: skip
        self.add_sections(
            "Box Office",
            [
                ("/events/", "Events", [f"/events/{e}.html" for e in events]),
                ("/faq/", "FAQ", ["/faq/venues.html"]),
            ],
        )

    def __call__(self, request: Request) -> Response:
        """429 while the budget lasts (robots.txt excluded), then the page."""
        if request.path != "/robots.txt":
            with self._lock:
                busy = self._left > 0
                self._left -= busy
            if busy:
                return Response.error(429, [("Retry-After", str(self.retry_after_s))])
        return super().__call__(request)


class SlowSite(Site):
    """``slow``: every response (robots.txt included) is delayed by ``delay_s``."""

    name = "slow"
    theme = _SLOW

    def __init__(self, base: str, www_home: str, delay_s: float) -> None:
        """Create the site; ``delay_s`` is the delay of every response, seconds."""
        super().__init__(base, www_home)
        self.delay_s = delay_s
        self.add_sections(
            "County Records Archive",
            [("/records/", "Records",
              ["/records/parish-register.html", "/records/tithe-map.html",
               "/records/estate-deeds.html"])],
        )  # fmt: skip

    def __call__(self, request: Request) -> Response:
        """The page, delayed."""
        response = super().__call__(request)
        response.delay_s = self.delay_s
        return response


# ---------------------------------------------------------------------------- spa

_SPA = Theme(
    "Shell Shop",
    "A storefront built as single-page apps",
    ("tent", "boot", "pack", "stove", "lantern", "compass", "map", "rope"),
    ("rendered", "dynamic", "hydrated", "client-side", "lazy", "bundled"),
    ("loads late", "appears on demand", "needs JavaScript", "hydrates quickly"),
    ("in the browser", "after the first paint", "behind the router", "in the bundle"),
)

_SHELL_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} | Shell Shop</title>
{head}</head>
<body>
{mount}
{scripts}
<footer><a href="{www_home}">the local web</a></footer>
</body>
</html>
"""

_NOSCRIPT = "<noscript>You need to enable JavaScript to run this app.</noscript>"

#: Renders ``LINKS`` (a list of ``[href, text]``) into the element ``MOUNT`` as a list.
_JS_SHOW = """function show(mount, links) {
  var ul = document.createElement("ul");
  links.forEach(function (link) {
    var li = document.createElement("li");
    var a = document.createElement("a");
    a.setAttribute("href", link[0]);
    a.textContent = link[1];
    li.appendChild(a);
    ul.appendChild(li);
  });
  mount.appendChild(ul);
}
"""

_HASH_ROUTER_JS = """(function () {
  var routes = %s;
  function current() {
    var hash = window.location.hash;
    return hash.indexOf("#/") === 0 && routes[hash.slice(1)] ? hash.slice(1) : "/";
  }
  function view() {
    var route = routes[current()];
    var html = "<h1>" + route.title + "</h1><nav>";
    route.links.forEach(function (link) {
      html += '<a href="' + link[0] + '">' + link[1] + "</a> ";
    });
    document.getElementById("app").innerHTML = html + "</nav>";
  }
  window.addEventListener("hashchange", view);
  view();
})();
"""


def _json_bytes(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


class SpaSite(Site):
    """``spa``: single-page-app shells whose links exist only once JavaScript ran.

    The home page is plain HTML linking the shells (so a crawler that does not
    render fetches the shells, and only them). Each shell's raw HTML is an empty
    mount point plus scripts and one footer link back to ``www``:

    ============  ===============================================================
    ``inline``    ``/app/inline``: ``<div id="root">`` filled by inline JavaScript;
                  also asks for an image, a font (preload) and a video
    ``hash``      ``/app/hash``: a hash router (``<div id="app">``, script
                  ``/static/hash-router.js``); its default view ``#/`` shows the
                  hash routes ``#/about``, ``#/contact`` (the same document for a
                  crawler, which drops fragments) and two real path links; the
                  pages linked only under ``#/about`` / ``#/contact`` are found by
                  no crawler that drops fragments
    ``fetch``     ``/app/fetch``: Next.js-like (``__NEXT_DATA__``); ``fetch()``es
                  ``/api/links.json`` and renders the links in it
    ``private``   ``/app/private``: ``<app-root>``; renders ``/api/public.json``,
                  and its XHR to ``/private-api/team.json`` is disallowed by
                  robots.txt (``Disallow: /private-api/``; the file also has
                  ``www``'s Crawl-delay): a polite renderer
                  never requests it, so the page it would link stays unknown
    ``never``     ``/app/never``: renders one link at once, then never settles:
                  polls ``/api/tick`` every 250 ms and waits on ``/api/hang``,
                  which answers after :attr:`HANG_S` seconds
    ``spin``      ``/app/spin`` (linked from nowhere): a script-only body that
                  renders one link, then loops forever on the page's main thread
    ============  ===============================================================

    Ground truth beyond :class:`Site`'s sets (request targets):
    :attr:`shells` (kind -> target), :attr:`rendered_only`,
    :attr:`render_disallowed`, :attr:`render_unreachable`, :attr:`render_resources`.
    """

    name = "spa"
    theme = _SPA
    HANG_S = 60.0
    """Seconds ``/api/hang`` waits before answering (cut short when the web stops)."""

    INLINE_LINKS: tuple[Link, ...] = (
        ("/articles/tents.html", "Tents"),
        ("/articles/stoves.html", "Stoves"),
        ("/articles/lanterns.html", "Lanterns"),
    )
    HASH_ROUTES: Mapping[str, tuple[str, tuple[Link, ...]]] = {
        "/": (
            "Docs",
            (
                ("#/about", "About"),
                ("#/contact", "Contact"),
                ("/docs/getting-started.html", "Getting started"),
                ("/docs/faq.html", "FAQ"),
            ),
        ),
        "/about": ("About", (("#/", "Docs"), ("/docs/history.html", "Our history"))),
        "/contact": ("Contact", (("#/", "Docs"), ("/docs/contact-form.html", "Write to us"))),
    }
    FETCH_LINKS: tuple[Link, ...] = (
        ("/catalog/boots.html", "Boots"),
        ("/catalog/packs.html", "Packs"),
        ("/catalog/ropes.html", "Ropes"),
    )
    PUBLIC_LINKS: tuple[Link, ...] = (("/team/roster.html", "Team roster"),)
    PRIVATE_LINKS: tuple[Link, ...] = (("/team/salaries.html", "Salaries"),)
    NEVER_LINKS: tuple[Link, ...] = (("/articles/live.html", "Live ticker"),)
    SPIN_LINKS: tuple[Link, ...] = (("/articles/spin.html", "Spinning"),)

    def __init__(self, base: str, www_home: str, crawl_delay: str) -> None:
        """Create the site (see the class docstring).

        Args:
            base: this host's base URL.
            www_home: the ``www`` home page URL.
            crawl_delay: the Crawl-delay value written in robots.txt, e.g. ``"1"``
                (the same as ``www``'s: a renderer's sub-requests are spaced by it).
        """
        super().__init__(base, www_home)
        self.crawl_delay = crawl_delay
        self.shells: dict[str, str] = {
            "inline": "/app/inline",
            "hash": "/app/hash",
            "fetch": "/app/fetch",
            "private": "/app/private",
            "never": "/app/never",
            "spin": "/app/spin",
        }
        titles = {
            "inline": "Catalogue (inline script)",
            "hash": "Docs (hash router)",
            "fetch": "Catalog (fetch)",
            "private": "Team (private API)",
            "never": "Live (never settles)",
        }
        self.pages["/"] = Page(
            "Shell Shop",
            [(self.shells[kind], title) for kind, title in titles.items()],
            intro="<p>Every page below is a single-page app: its links appear only "
            "once its JavaScript has run.</p>\n",
            paragraphs=1,
        )
        self.good.update({"/", *(self.shells[kind] for kind in titles)})
        default_view = [h for h, _ in self.HASH_ROUTES["/"][1] if not h.startswith("#")]
        hidden_views = [
            h
            for route, (_, links) in self.HASH_ROUTES.items()
            if route != "/"
            for h, _ in links
            if not h.startswith("#")
        ]
        self.rendered_only: set[str] = {
            *(h for h, _ in self.INLINE_LINKS),
            *default_view,
            *(h for h, _ in self.FETCH_LINKS),
            *(h for h, _ in self.PUBLIC_LINKS),
            *(h for h, _ in self.NEVER_LINKS),
        }
        self.render_unreachable: set[str] = {*hidden_views, *(h for h, _ in self.PRIVATE_LINKS)}
        self.render_disallowed: set[str] = {"/private-api/team.json"}
        self.render_resources: set[str] = {
            "/img/hero.png",
            "/fonts/display.woff2",
            "/media/intro.mp4",
        }
        for path in self.rendered_only | self.render_unreachable | {"/articles/spin.html"}:
            self.pages[path] = Page(self.title_for(path), [("/", "Shell Shop")], paragraphs=1)
        self._api: dict[str, Response] = {
            "/api/links.json": Response(200, _json_bytes(self.FETCH_LINKS), "application/json"),
            "/api/public.json": Response(200, _json_bytes(self.PUBLIC_LINKS), "application/json"),
            "/private-api/team.json": Response(
                200, _json_bytes(self.PRIVATE_LINKS), "application/json"
            ),
            "/static/hash-router.js": Response(
                200,
                (_HASH_ROUTER_JS % json.dumps(self._routes_for_js())).encode("utf-8"),
                "text/javascript; charset=utf-8",
            ),
            "/img/hero.png": Response(200, _png_1x1(), "image/png"),
            "/fonts/display.woff2": Response(200, b"wOF2" + bytes(60), "font/woff2"),
            "/media/intro.mp4": Response(200, b"\x00\x00\x00\x18ftypmp42" + bytes(48), "video/mp4"),
        }

    def _routes_for_js(self) -> dict[str, dict[str, object]]:
        return {
            route: {"title": title, "links": [list(link) for link in links]}
            for route, (title, links) in self.HASH_ROUTES.items()
        }

    def robots(self, request: Request) -> Response:
        """``Disallow: /private-api/`` and the Crawl-delay, for everyone."""
        return Response.text(
            f"User-agent: *\nDisallow: /private-api/\nCrawl-delay: {self.crawl_delay}\n"
        )

    def route(self, request: Request) -> Response | None:
        """The shells, the JSON endpoints, the router script and the media files."""
        path = request.path
        if path == "/api/tick":
            n = (request.query.get("n") or ["0"])[0]
            tick = int(n) if n.isdigit() and len(n) < 10 else 0
            return Response(200, _json_bytes({"n": tick}), "application/json")
        if path == "/api/hang":
            return Response(200, b"{}", "application/json", delay_s=self.HANG_S)
        found = self._api.get(path)
        if found is not None:
            return replace(found, headers=list(found.headers))
        for kind, target in self.shells.items():
            if path == target:
                return Response.html(self._shell(kind))
        return None

    def _shell(self, kind: str) -> str:
        """The raw HTML of shell ``kind``."""
        head = ""
        mount = ""
        scripts = ""
        if kind == "inline":
            head = (
                '<link rel="preload" href="/fonts/display.woff2" as="font" '
                'type="font/woff2" crossorigin>\n'
            )
            mount = '<div id="root"></div>'
            scripts = (
                "<script>\n(function () {\n"
                f"  var links = {json.dumps([list(link) for link in self.INLINE_LINKS])};\n"
                "  var html = '<h1>Catalogue</h1>"
                '<img src="/img/hero.png" alt="Our tents" width="600" height="200">'
                '<video src="/media/intro.mp4" preload="auto" muted></video><ul>\';\n'
                "  links.forEach(function (link) {\n"
                "    html += '<li><a href=\"' + link[0] + '\">' + link[1] + '</a></li>';\n"
                "  });\n"
                '  document.getElementById("root").innerHTML = html + "</ul>";\n'
                "})();\n</script>"
            )
        elif kind == "hash":
            mount = f'<div id="app"></div>\n{_NOSCRIPT}'
            scripts = '<script src="/static/hash-router.js"></script>'
        elif kind == "fetch":
            data = {"props": {"pageProps": {}}, "page": "/app/fetch", "buildId": "localweb"}
            mount = '<div id="__next"></div>'
            scripts = (
                '<script id="__NEXT_DATA__" type="application/json">'
                f"{json.dumps(data)}</script>\n<script>\n{_JS_SHOW}"
                'fetch("/api/links.json")\n'
                "  .then(function (response) { return response.json(); })\n"
                '  .then(function (links) { show(document.getElementById("__next"), links); });\n'
                "</script>"
            )
        elif kind == "private":
            mount = f"<app-root></app-root>\n{_NOSCRIPT}"
            scripts = (
                f"<script>\n{_JS_SHOW}"
                'var root = document.querySelector("app-root");\n'
                "var xhr = new XMLHttpRequest();\n"
                'xhr.open("GET", "/private-api/team.json");\n'
                "xhr.onload = function () { show(root, JSON.parse(xhr.responseText)); };\n"
                "xhr.onerror = function () {\n"
                '  root.insertAdjacentHTML("beforeend", "<p>Team data unavailable.</p>");\n'
                "};\n"
                "xhr.send();\n"
                'fetch("/api/public.json")\n'
                "  .then(function (response) { return response.json(); })\n"
                "  .then(function (links) { show(root, links); });\n"
                "</script>"
            )
        elif kind == "never":
            mount = '<div id="root" data-reactroot=""></div>'
            scripts = (
                f"<script>\n{_JS_SHOW}"
                'var root = document.getElementById("root");\n'
                f"show(root, {json.dumps([list(link) for link in self.NEVER_LINKS])});\n"
                "var n = 0;\n"
                "setInterval(function () {\n"
                "  n += 1;\n"
                '  fetch("/api/tick?n=" + n).catch(function () {});\n'
                "}, 250);\n"
                'fetch("/api/hang").catch(function () {});\n'
                "</script>"
            )
        else:  # spin: a bundle-like script-only body that then loops forever
            bundle = "".join(
                f"var m{i} = function (e, t, n) {{ 'use strict'; t.exports = n({i}); }};\n"
                for i in range(40)
            )
            scripts = (
                f"<script>\n{bundle}{_JS_SHOW}"
                f"show(document.body, {json.dumps([list(link) for link in self.SPIN_LINKS])});\n"
                "setTimeout(function () { for (;;) {} }, 50);\n"
                "</script>"
            )
        return _SHELL_TEMPLATE.format(
            title=escape(title_of(kind)),
            head=head,
            mount=mount,
            scripts=scripts,
            www_home=escape(self.www_home),
        )


_SITEMAP = Theme(
    site_name="Quarry Lane Archive",
    tagline="Catalogue of the quarry's finds, one record a page",
    nouns=("fossil", "ammonite", "trilobite", "seam", "core sample", "record"),
    adjectives=("banded", "grey", "chalky", "ancient", "catalogued", "fragile"),
    verbs=("lists", "dates", "describes", "labels", "records", "measures"),
    places=("the north face", "the lower bench", "the spoil heap", "the old cutting"),
)

#: The ``sitemap`` host's urlsets: path -> the record pages it lists.
SITEMAP_FILES: Mapping[str, tuple[str, ...]] = {
    "/sitemap-records.xml": tuple(f"/records/{n:03d}.html" for n in range(1, 7)),
    "/sitemap-more.xml.gz": tuple(f"/records/{n:03d}.html" for n in range(7, 13)),
}


class SitemapSite(Site):
    """``sitemap``: pages with no links between them (no navigation; each links only to
    the ``www`` home in its footer), reachable only through the site's sitemaps: its
    robots.txt names ``/sitemap_index.xml``, an index of two urlsets,
    ``/sitemap-records.xml`` and the gzipped ``/sitemap-more.xml.gz`` (sitemaps.org
    protocol), with ``lastmod``, ``changefreq`` and ``priority``. The second urlset
    also lists a page robots.txt disallows (``/private/ledger.html``)."""

    name = "sitemap"
    theme = _SITEMAP
    LASTMOD = "2024-05-01T12:00:00+00:00"

    def __init__(self, base: str, www_home: str) -> None:
        """Create the site."""
        super().__init__(base, www_home)
        self.nav = []
        self.pages["/"] = Page("Quarry Lane Archive", paragraphs=1)
        for paths in SITEMAP_FILES.values():
            for path in paths:
                self.pages[path] = Page(self.title_for(path).removesuffix(".html"), paragraphs=1)
        self.good.update(self.pages)
        self.pages["/private/ledger.html"] = Page("Ledger", paragraphs=1)
        self.disallowed.add("/private/ledger.html")

    def robots(self, request: Request) -> Response:
        """Everything allowed but ``/private/``; the sitemap index declared."""
        return Response.text(
            f"User-agent: *\nDisallow: /private/\n\nSitemap: {self.base}/sitemap_index.xml\n"
        )

    def _urlset(self, paths: Sequence[str]) -> bytes:
        rows = "".join(
            f"<url><loc>{escape(self.base + path)}</loc><lastmod>{self.LASTMOD}</lastmod>"
            "<changefreq>monthly</changefreq><priority>0.5</priority></url>"
            for path in paths
        )
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>\n'
        ).encode()

    def route(self, request: Request) -> Response | None:
        """The index and its two urlsets (the second gzipped, sent as is)."""
        if request.path == "/sitemap_index.xml":
            rows = "".join(
                f"<sitemap><loc>{escape(self.base + path)}</loc></sitemap>"
                for path in SITEMAP_FILES
            )
            body = (
                '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex'
                f' xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</sitemapindex>\n'
            )
            return Response(200, body.encode(), "application/xml")
        if request.path == "/sitemap-records.xml":
            return Response(200, self._urlset(SITEMAP_FILES[request.path]), "application/xml")
        if request.path == "/sitemap-more.xml.gz":
            paths = (*SITEMAP_FILES[request.path], "/private/ledger.html")
            gz = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            return Response(200, gz.compress(self._urlset(paths)) + gz.flush(), "application/gzip")
        return None
