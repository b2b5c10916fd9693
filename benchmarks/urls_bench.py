"""CPU per link of ``core.policy.urls``: ``clean`` (join and parse), then ``normalize`` and
``host_key``, the work admission does for each new href of a page (issue #22 item 6).

The links are those of a blog-like page, 50 per page over 200 pages: navigation
(root-relative), relative paths with ``..``, absolute links to the same and other
hosts, protocol-relative CDN links, queries with tracking parameters, fragments,
``mailto:`` and ``javascript:``. ``--against REV`` loads ``core/policy/urls.py`` of that git
revision beside the working tree's and times both in turns (A B A B ...), so the
figures share the machine's load; each figure is the best of the rounds.

    .venv/bin/python benchmarks/urls_bench.py --against e70d53d
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from crawldeck.core.config import DEFAULT_STRIP_PARAMS
from crawldeck.core.errors import UrlError
from crawldeck.core.policy import urls

ROOT = Path(__file__).resolve().parent.parent


def page_links(page: int) -> tuple[str, list[str]]:
    """``(base, hrefs)`` of page number ``page``: 50 hrefs of the kinds above."""
    base = f"https://www.example.com/blog/2024/{page % 12 + 1:02d}/post-{page}.html"
    hrefs = [
        "/", "/about", "/blog/", "/tag/python", "/tag/asyncio", "/feed.xml", "/contact",
        "/search?q=crawler", "/login?next=/blog/", "/static/site.css",
        f"post-{page + 1}.html", f"post-{page - 1}.html", "../", "../../archive/",
        f"./post-{page}.html#comments", "#top", "#", "?page=2", f"?page=2&utm_source=x{page}",
        f"https://www.example.com/blog/2024/01/post-{page * 7 % 500}.html",
        f"https://www.example.com/tag/t{page % 40}", "https://www.example.com/",
        "https://other.example.org/", f"https://other.example.org/a/{page}",
        f"https://news.example.net/item?id={page}&ref=blog", "https://Example.COM:443/x",
        "//cdn.example.net/lib.js", "//cdn.example.net/img/logo.png",
        "http://old.example.com/~user/index.html", "https://www.example.com/a b/ü",
        "mailto:me@example.com", "javascript:void(0)", "tel:+123",
        f"/p/{page}/comments/", f"/p/{page}/share?via=x", "/a/./b/../c", "/%7Euser/",
        "https://www.example.com/blog/2024/05/", "https://bücher.example/", "/wp-json/",
        f"/category/c{page % 9}/page/2/", "/privacy", "/terms", "/sitemap.xml",
        "/index.php?p=1&sessionid=abc", f"/img/{page}.jpg", f"/img/{page}@2x.jpg",
        "https://www.example.com/?s=", "https://twitter.example/share?u=x", "/rss",
    ]  # fmt: skip
    return base, hrefs


def per_link(module: ModuleType, pages: list[tuple[str, list[str]]]) -> tuple[float, float]:
    """Seconds per href of ``clean`` alone and of ``clean`` + ``normalize`` + ``host_key``."""
    clean, normalize, host_key = module.clean, module.normalize, module.host_key
    strip = DEFAULT_STRIP_PARAMS
    count = sum(len(hrefs) for _, hrefs in pages)

    def cleaning() -> None:
        for base, hrefs in pages:
            for href in hrefs:
                with contextlib.suppress(UrlError):
                    clean(href, base)

    def admitting() -> None:
        for base, hrefs in pages:
            for href in hrefs:
                try:
                    url = clean(href, base)
                except UrlError:
                    continue
                normalize(url, strip)
                host_key(url)

    return _timed(cleaning) / count, _timed(admitting) / count


def _timed(work: Callable[[], None]) -> float:
    """Seconds of CPU ``work`` takes."""
    start = time.process_time()
    work()
    return time.process_time() - start


def load_revision(rev: str) -> ModuleType:
    """``crawldeck/core/policy/urls.py`` of git revision ``rev`` (``core/policy/urls.py`` before the
    folders moved under ``crawldeck/``), loaded as a module of its own.

    Raises:
        subprocess.CalledProcessError: git knows neither file at ``rev``.
    """
    for path in ("crawldeck/core/policy/urls.py", "core/policy/urls.py"):
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:{path}"], capture_output=True, text=True
        )
        if shown.returncode == 0:
            break
    shown.check_returncode()
    spec = importlib.util.spec_from_loader(f"urls_{rev}", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    exec(compile(shown.stdout, f"{rev}:{path}", "exec"), module.__dict__)
    return module


def main() -> None:
    """Print the per-link figures of the working tree (and of ``--against REV``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REV", help="a git revision to compare with")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    pages = [page_links(page) for page in range(200)]
    contenders: dict[str, ModuleType] = {"this tree": urls}
    if args.against:
        contenders[args.against] = load_revision(args.against)
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.rounds):
        for name, module in contenders.items():
            figures = per_link(module, pages)
            old = best.get(name, figures)
            best[name] = (min(old[0], figures[0]), min(old[1], figures[1]))
    print(f"{sum(len(h) for _, h in pages)} hrefs, best of {args.rounds} rounds (CPU time)")
    for name, (clean_s, admit_s) in best.items():
        print(
            f"  {name:>10}: clean {clean_s * 1e6:.2f} us/link, "
            f"clean + normalize + host_key {admit_s * 1e6:.2f} us/link"
        )


if __name__ == "__main__":
    sys.exit(main())
