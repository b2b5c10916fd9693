"""Recrawl of unchanged docs (issue #13 item 8): crawl the local Python docs (python3-doc)
served by ``StaticSite`` on 127.78.0.9, then ``crawldeck recrawl`` them with nothing
changed, and print what the server answered each run (statuses, body bytes sent).

    .venv/bin/python benchmarks/recrawl_bench.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from crawldeck.localweb.static import StaticSite

DOCS = Path("/usr/share/doc/python3/html")


def main() -> int:
    """Crawl, recrawl, print one line per run; 1 if a run failed."""
    if not (DOCS / "index.html").exists():
        sys.exit("recrawl_bench: install python3-doc first (apt-get install python3-doc)")
    work = Path(tempfile.mkdtemp(prefix="crawldeck-recrawl-"))
    robots = "User-agent: *\nDisallow: /whatsnew/\n"
    exe = str(Path(sys.executable).parent / "crawldeck")
    failed = 0
    with StaticSite(DOCS, "127.78.0.9", 0, robots_txt=robots) as site:
        seeds = work / "seeds.txt"
        seeds.write_text(site.base_url + "/index.html\n")
        db = work / "docs.db"
        crawl = [
            exe,
            "crawl",
            str(seeds),
            "--no-ui",
            "--db",
            str(db),
            "--delay-ms",
            "1",
            "--max-depth",
            "100",
        ]
        for command in (crawl, [exe, "recrawl", str(db), "--no-ui"]):
            before, sent = len(site.access_log()), site.body_bytes
            started = time.perf_counter()
            proc = subprocess.run(command, capture_output=True, text=True, check=False)
            elapsed = time.perf_counter() - started
            log = site.access_log()[before:]
            answers = Counter(a.status for a in log if a.path != "/robots.txt")
            failed += proc.returncode != 0
            print(
                f"{command[1]:8} exit {proc.returncode}  {elapsed:.1f} s  requests {len(log)}"
                f"  page answers {dict(answers)}  body bytes {site.body_bytes - sent}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
