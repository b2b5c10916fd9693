"""``core.policy.urls.registered_domain`` against the Public Suffix List's own tests and against
tldextract (the lookup it replaced) reading the same list (issue #22 item 1: the lookup
left tldextract, 9.7 MiB in the crawl, for one set of rule strings, about 1.5 MiB)."""

from __future__ import annotations

import functools
import gc
import re
import warnings
from pathlib import Path

import pytest
import tldextract
from hypothesis import given
from hypothesis import strategies as st
from publicsuffixlist import PSLFILE

from crawldeck.core.errors import UrlError
from crawldeck.core.policy.urls import registered_domain

#: The PSL project's test cases (``checkPublicSuffix(name, expected)``), as the
#: ``publicsuffixlist`` package ships them beside its list.
PSL_TESTS = Path(PSLFILE).with_name("test_psl.txt")
_CASE = re.compile(r"checkPublicSuffix\((null|'[^']*'), (null|'[^']*')\);")


def _psl_cases() -> list[tuple[str | None, str | None]]:
    cases = []
    for line in PSL_TESTS.read_text(encoding="utf-8").splitlines():
        found = _CASE.match(line.strip())
        if found:
            name, expected = (None if v == "null" else v[1:-1] for v in found.groups())
            cases.append((name, expected))
    return cases


def _ascii(name: str) -> str:
    return ".".join(
        label if label.isascii() else "xn--" + label.encode("punycode").decode()
        for label in name.lower().split(".")
    )


def test_the_public_suffix_lists_own_tests_pass() -> None:
    """Each ``checkPublicSuffix`` of the PSL's test file: a name that is a public suffix
    (``null``) is its own registered domain here; names the URL cleaner refuses (a
    leading dot, an empty label) raise ``UrlError``."""
    cases = _psl_cases()
    assert len(cases) >= 70
    wrong = []
    for name, expected in cases:
        if name is None:
            continue
        if name.startswith(".") or ".." in name:
            with pytest.raises(UrlError):
                registered_domain(name)
            continue
        want = _ascii(name) if expected is None or "." not in name else _ascii(expected)
        if registered_domain(name) != want:
            wrong.append((name, registered_domain(name), want))
    assert wrong == []


@functools.cache
def _rules() -> list[str]:
    with open(PSLFILE, encoding="utf-8") as f:
        return [
            line.split()[0].lower()
            for line in f
            if line.strip() and not line.startswith("//") and line.isascii()
        ]


@functools.cache
def _oracle() -> tldextract.TLDExtract:
    """tldextract, as ``core.policy.urls`` used it until issue #22, on the same list file (its
    ``file:`` reader leaves the file to the garbage collector: collected here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        extract = tldextract.TLDExtract(
            suffix_list_urls=(Path(PSLFILE).as_uri(),),
            cache_dir=None,
            include_psl_private_domains=True,
            fallback_to_snapshot=False,
        )
        extract("www.example.com")  # reads the list now
        gc.collect()
    return extract


def _as_before(name: str) -> str:
    """The registered domain as ``core.policy.urls`` computed it with tldextract."""
    result = _oracle()(name)
    if result.suffix:
        return f"{result.domain}.{result.suffix}" if result.domain else name
    return ".".join(name.rsplit(".", 2)[-2:])


def _tldextract_misreads(name: str) -> bool:
    """Whether ``name`` is matched by a wildcard rule while ``*.name`` is a rule too
    (``r.cloud.int.apple`` under ``*.cloud.int.apple`` and ``*.r.cloud.int.apple``):
    tldextract's trie then follows the deeper wildcard's branch and misses the match,
    where the PSL's algorithm says the name is a public suffix."""
    rules = set(_rules())
    parent = name.partition(".")[2]
    return "*." + name in rules and "*." + parent in rules


LABELS = st.sampled_from(["www", "a", "x-1", "city", "b", "r", "xn--p1ai", "test"])


@given(
    rule=st.sampled_from(_rules()),
    prefix=st.lists(LABELS, max_size=3),
    drop=st.integers(0, 1),
)
def test_registered_domain_is_as_before_over_the_list(
    rule: str, prefix: list[str], drop: int
) -> None:
    """A name built on any rule of the list (its base, a label or more in front, or its
    parent) has the registered domain tldextract gave it on the same list."""
    base = rule.lstrip("!").removeprefix("*.")
    if drop:
        base = base.partition(".")[2] or base
    name = ".".join([*prefix, base])
    if _tldextract_misreads(name):
        return
    assert registered_domain(name) == _as_before(name)


def test_tldextract_misreads_only_nested_wildcards() -> None:
    """The names skipped above are few, and what the PSL's algorithm says of them."""
    rules = set(_rules())
    skipped = [r.removeprefix("*.") for r in rules if r.startswith("*.")]
    skipped = [n for n in skipped if _tldextract_misreads(n)]
    assert 0 < len(skipped) < 50
    for name in skipped:
        assert registered_domain(name) == name != _as_before(name)
