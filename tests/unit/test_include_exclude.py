"""Include and exclude patterns (issue #14 item 3): ``include`` / ``exclude`` in the
config and ``--include`` / ``--exclude`` on the command line, checked in admission.

Pure logic directly (``core.policy.traps.UrlPatterns``, the trap guard's order, admission's
blocked sink, the config's checks and its round trip through JSON as a cluster
crawl sends it), a Hypothesis property against a reference model of the rule, and
one run of the real ``crawldeck`` command for the one-line error of a bad pattern.
The end-to-end crawl with an exclude is in ``tests/unit/test_host_overrides.py`` (one
crawl of the local web shows both).
"""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawldeck.core.config import asdict, build_config, load_config
from crawldeck.core.errors import ConfigError
from crawldeck.core.policy.admission import Admission
from crawldeck.core.policy.seen import SeenSet
from crawldeck.core.policy.traps import (
    BlockReason,
    ScopePolicy,
    TrapGuard,
    TrapSettings,
    UrlPatterns,
    Verdict,
)

TODAY = datetime.date(2026, 5, 15)


class NoKeys:
    """A key store with nothing in it (``KeyStore``)."""

    def contains(self, key: str) -> bool:
        return False


def guard(scope: str = "any", seeds: tuple[str, ...] = (), **values: Any) -> TrapGuard:
    """A trap guard of the config of ``values``, with its patterns."""
    config = build_config(values)
    policy = ScopePolicy(scope)  # type: ignore[arg-type]
    for seed in seeds:
        policy.add_seed(seed)
    return TrapGuard(
        TrapSettings.from_config(config), policy, TODAY, patterns=UrlPatterns.from_config(config)
    )


# ------------------------------------------------------------------ the rule itself


def test_an_exclude_found_anywhere_in_the_url_refuses_it_and_names_the_pattern() -> None:
    patterns = UrlPatterns(exclude=[r"\.pdf$", r"/private/"])
    assert patterns.verdict("http://a.test/docs/x.pdf") == Verdict(
        BlockReason.EXCLUDED, r"matches exclude '\\.pdf$'"
    )
    assert patterns.verdict("http://a.test/private/y") == Verdict(
        BlockReason.EXCLUDED, "matches exclude '/private/'"
    )
    # re.search: not anchored unless the pattern is
    assert patterns.verdict("http://a.test/x.pdf?v=1") is None
    assert patterns.verdict("http://a.test/docs/") is None


def test_with_includes_a_url_must_match_one_of_them() -> None:
    patterns = UrlPatterns(include=["/docs/", "/blog/"])
    assert patterns.verdict("http://a.test/docs/intro") is None
    assert patterns.verdict("http://a.test/blog/") is None
    assert patterns.verdict("http://a.test/shop/") == Verdict(
        BlockReason.EXCLUDED, "matches no include ('/docs/', '/blog/')"
    )
    many = UrlPatterns(include=["/a/", "/b/", "/c/", "/d/", "/e/"])
    verdict = many.verdict("http://a.test/z/")
    assert verdict is not None
    assert verdict.detail == "matches no include ('/a/', '/b/', '/c/', ... (5 in all))"


def test_a_seed_need_not_match_an_include_but_an_exclude_refuses_it() -> None:
    patterns = UrlPatterns(include=["/docs/"], exclude=["/old/"])
    assert patterns.verdict("http://a.test/", is_seed=True) is None
    assert patterns.verdict("http://a.test/", is_seed=False) is not None
    refused = patterns.verdict("http://a.test/old/", is_seed=True)
    assert refused == Verdict(BlockReason.EXCLUDED, "matches exclude '/old/'")


def test_exclude_is_checked_before_include() -> None:
    patterns = UrlPatterns(include=["/docs/"], exclude=["/docs/old/"])
    assert patterns.verdict("http://a.test/docs/new/") is None
    verdict = patterns.verdict("http://a.test/docs/old/")
    assert verdict is not None and verdict.detail == "matches exclude '/docs/old/'"


def test_no_pattern_lets_everything_through() -> None:
    patterns = UrlPatterns()
    assert not patterns
    assert UrlPatterns(include=["x"])
    assert UrlPatterns(exclude=["x"])
    assert patterns.verdict("http://a.test/anything") is None


def test_patterns_are_case_sensitive_unless_they_say_otherwise() -> None:
    assert UrlPatterns(exclude=["/Docs/"]).verdict("http://a.test/docs/") is None
    assert UrlPatterns(exclude=["(?i)/Docs/"]).verdict("http://a.test/docs/") is not None


# A URL made of a few path words, and patterns that are words (escaped: literal text),
# against the reference model: excluded iff some exclude word is in the URL, or there
# are include words, the URL is no seed and holds none of them.
WORDS = st.sampled_from(["docs", "blog", "old", "a.b", "x+y", "[1]", "café", "?q=1"])


@given(
    path=st.lists(WORDS, max_size=4),
    include=st.lists(WORDS, max_size=3),
    exclude=st.lists(WORDS, max_size=3),
    is_seed=st.booleans(),
)
def test_the_verdict_is_the_reference_models(
    path: list[str], include: list[str], exclude: list[str], is_seed: bool
) -> None:
    url = "http://a.test/" + "/".join(path)
    patterns = UrlPatterns([re.escape(w) for w in include], [re.escape(w) for w in exclude])
    verdict = patterns.verdict(url, is_seed=is_seed)
    refused = any(w in url for w in exclude) or (
        bool(include) and not is_seed and not any(w in url for w in include)
    )
    assert (verdict is not None) == refused
    if verdict is not None:
        assert verdict.reason is BlockReason.EXCLUDED


# ------------------------------------------------------- in the trap guard's order


def test_the_guard_checks_the_patterns_after_the_scope_and_before_the_depth() -> None:
    g = guard("host", seeds=("http://a.test/",), exclude=["/tmp/"], include=["/docs/"], max_depth=1)
    outside = g.admit("http://b.test/docs/", 1, 0)
    assert outside is not None and outside.reason is BlockReason.SCOPE
    deep = g.admit("http://a.test/tmp/", 5, 0)
    assert deep is not None and deep.reason is BlockReason.EXCLUDED
    too_deep = g.admit("http://a.test/docs/x", 5, 0)
    assert too_deep is not None and too_deep.reason is BlockReason.DEPTH
    assert g.admit("http://a.test/docs/x", 1, 0) is None
    assert g.admit("http://a.test/", 0, 0, is_seed=True) is None
    seed = g.admit("http://a.test/tmp/", 0, 0, is_seed=True)
    assert seed is not None and seed.reason is BlockReason.EXCLUDED


def test_a_guard_without_patterns_admits_as_before() -> None:
    g = guard()
    assert g.admit("http://a.test/anything.pdf", 0, 0) is None


async def test_admission_records_each_excluded_link_once_in_blocked() -> None:
    config = build_config({"exclude": [r"\.pdf$"], "include": ["/docs/"]})
    trap_guard = TrapGuard(
        TrapSettings.from_config(config),
        ScopePolicy("any"),
        TODAY,
        patterns=UrlPatterns.from_config(config),
    )
    blocked: list[tuple[str, str, Verdict]] = []
    admission = Admission(
        config.strip_params,
        trap_guard,
        SeenSet(NoKeys()),
        lambda url, host, verdict: blocked.append((url, host, verdict)),
    )
    hrefs = ["/docs/a", "/docs/a.pdf", "/shop/", "/docs/b", "/docs/a.pdf"]
    edges, admitted = await admission.follow(
        "http://a.test/docs/", "a.test", hrefs, "http://a.test/docs/", 1
    )
    assert [link.url for link in admitted] == ["http://a.test/docs/a", "http://a.test/docs/b"]
    assert len(edges) == 4  # one edge per href, a repeat once
    assert [(url, verdict.reason, verdict.detail) for url, _, verdict in blocked] == [
        ("http://a.test/docs/a.pdf", BlockReason.EXCLUDED, r"matches exclude '\\.pdf$'"),
        ("http://a.test/shop/", BlockReason.EXCLUDED, "matches no include ('/docs/')"),
    ]
    # found again on another page: not recorded twice
    await admission.follow("http://a.test/docs/b", "a.test", ["/shop/"], "http://a.test/", 1)
    assert len(blocked) == 2
    # a seed outside the includes is admitted
    seed = admission.link("http://a.test/")
    assert admission.admit(seed, 0, is_seed=True) is True


# ------------------------------------------------------------------- the config


@pytest.mark.parametrize("key", ["include", "exclude"])
def test_a_bad_pattern_is_one_line_naming_the_key_and_the_pattern(key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build_config({key: ["/docs/", "(unclosed"]})
    assert str(caught.value) == (
        f"config key {key!r}: '(unclosed' is not a regular expression: "
        "missing ), unterminated subpattern at position 0"
    )
    with pytest.raises(ConfigError, match=f"config key {key!r}: expected a list of strings"):
        build_config({key: "/docs/"})
    with pytest.raises(ConfigError) as caught:  # a shell glob (issue #25 trial 19)
        build_config({key: ["*.html"]})
    assert str(caught.value) == (
        f"config key {key!r}: '*.html' is not a regular expression: nothing to repeat at "
        "position 0 (a regex, not a glob: '\\.html$')"
    )


def test_the_toml_lists_are_read_and_flags_replace_them(tmp_path: Path) -> None:
    path = tmp_path / "crawl.toml"
    path.write_text('include = ["/docs/", "/blog/"]\n[crawl]\nexclude = ["\\\\.pdf$"]\n')
    config = load_config(path)
    assert config.include == ("/docs/", "/blog/")
    assert config.exclude == (r"\.pdf$",)
    flagged = load_config(path, {"include": ["/api/"], "exclude": None})
    assert flagged.include == ("/api/",)
    assert flagged.exclude == (r"\.pdf$",)  # a flag not given leaves the file's


def test_the_patterns_survive_the_json_a_cluster_crawl_sends() -> None:
    config = build_config({"include": ["/docs/"], "exclude": [r"\?print=1$"]})
    again = build_config(json.loads(json.dumps(asdict(config))))
    assert again == config
    assert (again.include, again.exclude) == (("/docs/",), (r"\?print=1$",))
