"""The local web's pages for issue #13 (``moved``'s ``/collection/``), read by
``core.policy.links``: duplicates, near duplicates, a canonical link, frames and iframes."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import httpx
import pytest

from crawldeck.core.policy.links import Extracted, extract_links
from crawldeck.core.policy.simhash import hamming
from crawldeck.localweb.sites import MovedSite
from crawldeck.localweb.web import LocalWeb


@pytest.fixture(scope="module")
def moved() -> Iterator[dict[str, tuple[bytes, Extracted]]]:
    """Every good HTML page of ``moved``: path -> (body, what ``extract_links`` gives)."""
    with LocalWeb() as web, httpx.Client() as client:
        pages: dict[str, tuple[bytes, Extracted]] = {}
        for url in sorted(web.expected.good["moved"]):
            response = client.get(url)
            assert response.status_code == 200, url
            got = extract_links(response.content, url, response.headers, "crawldeck")
            pages[httpx.URL(url).path] = (response.content, got)
        yield pages


def test_exact_duplicates_are_the_same_bytes(moved: dict[str, tuple[bytes, Extracted]]) -> None:
    for a, b in MovedSite.DUPLICATES:
        assert moved[a][0] == moved[b][0]
        assert moved[a][1].simhash == moved[b][1].simhash is not None


def test_near_duplicates_differ_in_bytes_not_in_simhash(
    moved: dict[str, tuple[bytes, Extracted]],
) -> None:
    for a, b in MovedSite.NEAR_DUPLICATES:
        (body_a, got_a), (body_b, got_b) = moved[a], moved[b]
        assert body_a != body_b
        assert got_a.simhash is not None and got_b.simhash is not None
        assert hamming(got_a.simhash, got_b.simhash) <= 3, (a, b)


def test_no_other_pair_is_a_near_duplicate(moved: dict[str, tuple[bytes, Extracted]]) -> None:
    pairs = {frozenset(p) for p in MovedSite.DUPLICATES + MovedSite.NEAR_DUPLICATES}
    distances = [
        hamming(moved[a][1].simhash or 0, moved[b][1].simhash or 0)
        for a, b in itertools.combinations(moved, 2)
        if frozenset((a, b)) not in pairs and moved[a][1].simhash and moved[b][1].simhash
    ]
    assert len(distances) > 200
    assert min(distances) > 10  # unrelated pages of one site: far apart, boilerplate and all


def test_the_print_view_names_its_canonical(moved: dict[str, tuple[bytes, Extracted]]) -> None:
    for path, canonical in MovedSite.CANONICAL.items():
        assert moved[path][1].canonical == canonical
        assert moved[canonical][1].canonical is None
    assert {p for p, (_, got) in moved.items() if got.canonical} == set(MovedSite.CANONICAL)


def test_framed_pages_are_linked_by_frames_only(moved: dict[str, tuple[bytes, Extracted]]) -> None:
    frameset = moved[MovedSite.FRAMESET][1]
    assert frameset.links == ["/collection/frame-nav.html", "/collection/frame-main.html"]
    assert frameset.title == "Framed view | Riverside Museum"
    assert frameset.simhash is None  # a frameset has no body text
    index = moved["/collection/"][1].links
    assert index.index("/collection/map.html") < index.index("/collection/ledger.html")
    for path, (body, _) in moved.items():
        for framed in MovedSite.FRAMED:
            assert f'<a href="{framed}"'.encode() not in body, (path, framed)
