"""``crawldeck export --table`` takes every table (issue #25 item 6: ``page_versions``,
``runs``, ``sitemaps``, ``sitemap_urls`` too), and a recrawl's summary shows the run's
own responses, its 304s among them. A real crawl and recrawl of a static site with a
sitemap on loopback (its 304s from its ``ETag``), through the command's ``main``."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from clikit import main_in

from crawldeck.core.storage.export import TABLES
from crawldeck.localweb.static import StaticSite


def test_export_takes_every_table_and_a_recrawl_shows_its_304s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text('<a href="a.html">a</a>')
    (root / "a.html").write_text("<p>a</p>")
    with StaticSite(root, "127.79.25.1") as site:
        base = site.base_url
        (root / "robots.txt").write_text(f"User-agent: *\nDisallow:\nSitemap: {base}/sitemap.xml\n")
        (root / "sitemap.xml").write_text(
            '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"<url><loc>{base}/index.html</loc></url><url><loc>{base}/a.html</loc>"
            "<lastmod>2024-05-01</lastmod></url></urlset>"
        )
        crawl = ("crawl", f"{base}/index.html", "--no-ui", "--db", "c.db", "--delay-ms", "0")
        code, out, err = main_in(tmp_path, monkeypatch, capsys, *crawl)
        assert code == 0, err
        assert re.search(r"responses this run\s*│ 200 2\s*│", out), out
        assert "fetches (all runs)" not in out  # as many as the pages
        code, out, err = main_in(tmp_path, monkeypatch, capsys, "recrawl", "c.db", "--no-ui")
        assert code == 0, err
        code, again, err = main_in(tmp_path, monkeypatch, capsys, "recrawl", "c.db", "--no-ui")
        assert code == 0, err
    # a second recrawl counts on from every earlier fetch, not from the pages (issue #25
    # trial 9: after three recrawls of 19 pages, 30 fetches beside the hosts' 51)
    assert re.search(r"fetches \(all runs\)\s*│ 6 \(a URL fetched again", again), again
    # its progress lines count on from the 4 fetches made before (the old count started
    # from the 2 pages); which of 4, 5, 6 a line shows is the moment of its snapshot (a
    # loaded CI showed 5, one fetch in flight: it asked for 6 before)
    shown = [int(n) for n in re.findall(r"\[[0-9:]+\] (\d+) fetched", again)]
    assert shown and all(4 <= n <= 6 for n in shown), again
    # the pages table's status mix is all 200 (a 304 leaves the row): the run's row says
    assert re.search(r"status mix \(all runs\)\s*│ 2xx 2\s*│", out), out
    assert re.search(r"responses this run\s*│ 304 2\s*│", out), out
    # 2 pages, 4 fetches: the progress line's count, said apart (issue #25)
    assert re.search(r"pages \(all runs\)\s*│ 2\s*│", out), out
    assert re.search(
        r"fetches \(all runs\)\s*│ 4 \(a URL fetched again is a fetch, not a page\)", out
    ), out

    def exported(table: str) -> list[dict[str, str]]:
        code, text, err = main_in(
            tmp_path, monkeypatch, capsys, "export", "c.db", "--table", table, "--format", "csv"
        )
        assert code == 0, err
        assert err.startswith(f"crawldeck: exported {text.count(chr(10)) - 1} row")
        return list(csv.DictReader(io.StringIO(text)))

    versions = exported("page_versions")
    assert sorted((v["url"], v["status"], v["run_id"]) for v in versions) == [
        (f"{base}/a.html", "200", "1"), (f"{base}/a.html", "304", "2"),
        (f"{base}/a.html", "304", "3"),
        (f"{base}/index.html", "200", "1"), (f"{base}/index.html", "304", "2"),
        (f"{base}/index.html", "304", "3"),
    ]  # fmt: skip
    assert [(r["id"], r["status"]) for r in exported("runs")] == [
        ("1", "finished"), ("2", "finished"), ("3", "finished"),
    ]  # fmt: skip
    (sitemap,) = exported("sitemaps")
    assert (sitemap["url"], sitemap["status"], sitemap["kind"], sitemap["urls"]) == (
        f"{base}/sitemap.xml", "200", "urlset", "2",
    )  # fmt: skip
    assert sorted((u["url"], u["lastmod_at"]) for u in exported("sitemap_urls")) == [
        (f"{base}/a.html", "2024-05-01T00:00:00.000000Z"), (f"{base}/index.html", ""),
    ]  # fmt: skip
    code, text, err = main_in(tmp_path, monkeypatch, capsys, "export", "c.db", "--table", "runs")
    assert [json.loads(line)["id"] for line in text.splitlines()] == [1, 2, 3]
    for table in TABLES:  # each one the parser takes, each one exports
        assert main_in(tmp_path, monkeypatch, capsys, "export", "c.db", "--table", table)[0] == 0
