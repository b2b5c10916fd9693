"""SimHash and the near-duplicate index at scale (issue #13 item 4).

    .venv/bin/python benchmarks/simhash_bench.py [--docs DIR] [--pages N] [--hosts H]

1. SimHash cost per page, on real pages: the HTML files of ``--docs`` (default
   Debian's ``/usr/share/doc/python3/html``; the local web's good pages when it is
   missing). For each page: ``core.policy.links.extract_links`` as the crawl runs it (CPU
   us per page), and of that the visible-text extraction (``strip_tags`` and
   ``text``) and ``simhash64`` alone. SimHash is timed cold (an empty token cache,
   the first pages of a crawl) and warm (every token seen before). CPU time
   (``time.process_time``), the best of ``--rounds`` rounds.
2. ``NearDuplicates`` at ``--pages`` fingerprints (default 1 000 000) over ``--hosts``
   hosts (default 1: the worst case, every bucket shared; 1 000 spreads them): the
   time per ``find`` + ``add`` pair with the index full (100 000 more pages, half of
   them 0-3 bits away from a page already there, so ``find`` hits and misses both),
   and the memory per page (``tracemalloc``: the index's own bytes, and with the URL
   strings it keeps, for URLs like ``http://h17.example.com/docs/page-123456.html``).
   Fingerprints are uniform random 64-bit values (a crawl's SimHashes of distinct
   pages are spread too; clusters of near duplicates only shorten the buckets).
"""

from __future__ import annotations

import argparse
import gc
import glob
import random
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from crawldeck.core.policy import simhash
from crawldeck.core.policy.links import _NOT_TEXT, decode, extract_links
from crawldeck.core.policy.simhash import NearDuplicates, simhash64

DOCS = Path("/usr/share/doc/python3/html")
HTML = {"Content-Type": "text/html; charset=utf-8"}


def local_web_pages() -> list[bytes]:
    """The local web's good HTML pages (when no docs folder is there)."""
    import httpx

    from crawldeck.localweb.web import LocalWeb

    with LocalWeb(busy_429_count=0, slow_s=0.0) as web, httpx.Client() as client:
        bodies = [client.get(url) for url in sorted(web.expected.all_good)]
    return [r.content for r in bodies if r.headers.get("content-type", "").startswith("text/html")]


def best_cpu_s(rounds: int, work: Callable[[], object]) -> float:
    """The least CPU time of ``rounds`` runs of ``work``, in seconds."""
    best = float("inf")
    for _ in range(rounds):
        gc.collect()
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return best


def visible_text(body: bytes) -> str:
    """The text ``extract_links`` fingerprints (``core.policy.links._simhash``)."""
    tree = LexborHTMLParser(decode(body, HTML))
    tree.strip_tags(_NOT_TEXT)
    return tree.body.text(separator=" ") if tree.body is not None else ""


def page_costs(bodies: list[bytes], rounds: int) -> None:
    """Section 1: extraction, text and SimHash per page."""
    texts = [visible_text(b) for b in bodies]
    n = len(bodies)
    kib = sum(map(len, bodies)) / n / 1024
    words = sum(len(t.split()) for t in texts) / n
    print(f"pages: {n}, {kib:.1f} KiB of HTML and {words:.0f} words of text per page (mean)")

    def extract_all() -> None:
        for body in bodies:
            extract_links(body, "http://docs.test/page.html", HTML, "crawldeck")

    def parse_only() -> None:
        for body in bodies:
            LexborHTMLParser(decode(body, HTML)).css("a[href]")

    def text_all() -> None:
        for body in bodies:
            visible_text(body)

    def simhash_cold() -> None:
        for text in texts:
            simhash._token_hashes.clear()
            simhash64(text)

    def simhash_warm() -> None:
        for text in texts:
            simhash64(text)

    simhash_warm()  # fills the token cache
    figures = {
        "extract_links (all of it)": best_cpu_s(rounds, extract_all),
        "  parse + one CSS selection": best_cpu_s(rounds, parse_only),
        "  parse + visible text": best_cpu_s(rounds, text_all),
        "  simhash64, token cache warm": best_cpu_s(rounds, simhash_warm),
        "  simhash64, token cache empty per page": best_cpu_s(rounds, simhash_cold),
    }
    for name, seconds in figures.items():
        print(f"{name:<42} {seconds / n * 1e6:9.0f} us per page")
    warm = figures["  simhash64, token cache warm"]
    print(f"simhash64 warm: {warm / (words * n) * 1e9:.0f} ns per word")


def index_costs(pages: int, hosts: int, rounds: int) -> None:
    """Section 2: find + add with ``pages`` fingerprints held; memory per page."""
    rnd = random.Random(13)
    fps = [rnd.getrandbits(64) for _ in range(pages)]
    host_names = [f"h{i}.example.com" for i in range(hosts)]

    def url(i: int) -> str:
        return f"http://{host_names[i % hosts]}/docs/page-{i:06d}.html"

    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    index = NearDuplicates()
    for i, fp in enumerate(fps):
        index.add(host_names[i % hosts], fp, url(i))
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    url_bytes = sum(sys.getsizeof(url(i)) for i in range(0, pages, max(1, pages // 10_000)))
    url_bytes = url_bytes * pages // len(range(0, pages, max(1, pages // 10_000)))
    print(
        f"NearDuplicates, {len(index):,} pages over {hosts:,} host(s): "
        f"{held / pages:.0f} bytes per page with the URL strings, "
        f"{(held - url_bytes) / pages:.0f} without them"
    )

    extra = 100_000
    queries: list[tuple[str, int, str]] = []
    for i in range(extra):
        if i % 2:
            j = rnd.randrange(pages)
            fp = fps[j]
            for bit in rnd.sample(range(64), rnd.randint(0, 3)):
                fp ^= 1 << bit
            host = host_names[j % hosts]
        else:
            fp = rnd.getrandbits(64)
            host = host_names[i % hosts]
        queries.append((host, fp, f"http://{host}/new/{i}.html"))

    def find_and_add() -> None:
        found = 0
        for host, fp, new_url in queries:
            if index.find(host, fp) is not None:
                found += 1
            index.add(host, fp, new_url)
        assert found >= extra // 2, found

    took = best_cpu_s(1, find_and_add)  # adds change the index: one round only
    print(f"find + add with {pages:,} pages held: {took / extra * 1e6:.2f} us per pair")
    misses = [(h, f) for h, f, _ in queries[::2]]
    took = best_cpu_s(rounds, lambda: [index.find(h, f) for h, f in misses])
    print(f"find alone (a miss): {took / len(misses) * 1e6:.2f} us")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--docs", type=Path, default=DOCS)
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    files = sorted(Path(f) for f in glob.glob(f"{args.docs}/**/*.html", recursive=True))
    if files:
        print(f"pages of {args.docs}")
        bodies = [f.read_bytes() for f in files]
    else:
        print(f"{args.docs} is missing: the local web's pages")
        bodies = local_web_pages()
    page_costs(bodies, args.rounds)
    index_costs(args.pages, args.hosts, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
