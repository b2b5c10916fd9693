"""SimHash fingerprints of page text and a near-duplicate index (issue #13 item 4).

``simhash64(text)`` is Charikar's similarity hash ("Similarity estimation techniques
from rounding algorithms", STOC 2002, §3): every feature of the text has a 64-bit hash;
bit ``i`` of the fingerprint is 1 when more features have bit ``i`` set than clear.
Two texts that share most of their features get fingerprints that differ in few bits:
the expected Hamming distance is ``64 * angle / pi`` for the angle between the two
feature-count vectors.

Features: word 3-shingles (every run of 3 consecutive word tokens, counted with
repeats). A word token is a maximal run of ASCII letters, digits, ``_`` and non-ASCII
characters of the UTF-8 text, ASCII letters lowercased; ASCII punctuation and spaces
separate tokens, so markup spacing and punctuation do not count. Non-ASCII
characters (dashes and curly quotes among them) are all word characters and are not
case-folded: that keeps tokenizing in three C calls, ``encode``, ``translate`` and
``split``, where the ``\\w+`` regex cost 4 times as much; a text without ASCII
spaces, such as Chinese, gives long tokens and so coarser features.

Why shingles and not single words: the bag of words of any two English pages is
dominated by the same function words ("the", "of", "to"), so unrelated pages would
look alike (cosine 0.5-0.7 between term-count vectors); two unrelated pages share
almost no 3-shingles, and shingles keep the word order. Why 3 and not more: a
changed word changes ``n`` shingles, so the distance a small edit causes grows with
``n``; with ``n = 3`` one word changed in 500 gives an expected 2.2 bits (about 1
page in 6 lands over 3 bits; ``tests/unit/test_simhash.py`` measures it). This is the
shingling of Broder et al. ("Syntactic clustering of the Web", 1997) with word
tokens, as Manku et al. describe SimHash on web pages (features from the text, WWW
2007 §2). Scripts, styles and markup are not text: the caller (``core.policy.links``)
passes the page's visible text.

Feature hashes: each distinct token's 64-bit hash is its BLAKE2b digest
(``digest_size=8``, little-endian; stable across processes and runs, unlike
``hash()``), cached per process (``_TOKEN_CACHE_MAX`` tokens; a full cache is
emptied). A shingle ``(a, b, c)`` hashes to ``rotl(h(a), 2) ^ rotl(h(b), 1) ^
h(c)``: the cyclic-polynomial (BuzHash) hash of n-grams (Cohen, "Recursive hashing
functions for n-grams", ACM TOIS 1997), which needs one BLAKE2b call per distinct
token rather than one per shingle (a call costs about 0.9 us here, a dictionary hit
0.1 us). The page's token hashes are laid side by side in one big int, so the
rotations and XORs of all shingles are a few big-int operations, and the per-bit
majority is 64 ``bit_count`` calls; no Python code runs per token on a cache hit. A
text with 1 or 2 tokens has one feature, its tokens joined by a space. Only the
first ``MAX_CHARS`` characters are read, so the cost of a page is bounded.

``NearDuplicates`` is the table scheme of Manku, Jain and Das Sarma ("Detecting
near-duplicates for web crawling", WWW 2007, §3): for Hamming distance ``k <= 3`` the
64 bits are cut into 4 blocks of 16; two fingerprints within distance 3 differ in at
most 3 blocks, so they agree exactly on at least one (pigeonhole). Each host keeps
one bucket per (block index, block value); a lookup checks the fingerprints of its 4
buckets, which at 1 M pages of one host is about 4 x 15 candidates. A host of at
most ``_LINEAR_MAX`` (32) pages has no buckets yet: its fingerprints are checked one
by one, which costs about as much and spares the many small hosts of a broad crawl
4 dictionary entries per page.
"""

from __future__ import annotations

from array import array

# hashlib's blake2b is _blake2's (hashlib never takes BLAKE2 from OpenSSL), but importing
# hashlib loads OpenSSL's libcrypto for its other algorithms: 3.6 MiB of RSS in each parse
# worker process, which needs BLAKE2 only (issue #22 item 1). A CPython built without
# _blake2 falls back to hashlib.
try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - every CPython build this project supports has it
    from hashlib import blake2b

__all__ = [
    "MAX_CHARS",
    "NearDuplicates",
    "hamming",
    "simhash64",
    "to_signed",
    "to_unsigned",
]

#: Characters of text read by ``simhash64`` (the rest is ignored): about 150 000 words.
MAX_CHARS = 1_000_000
#: Tokens whose hash a process keeps (about 120 bytes each: 4 MiB at the cap).
_TOKEN_CACHE_MAX = 1 << 15
_SHINGLE = 3
_MASK = (1 << 64) - 1
_SIGN = 1 << 63
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
#: ``bytes.translate`` table: ASCII letters lowercased, other word bytes (digits, ``_``,
#: every byte of a non-ASCII character) kept, every other byte a space.
_TOKENS = bytes(
    (b | 0x20 if 0x41 <= b <= 0x5A else b) if b in _WORD_BYTES or b >= 0x80 else 0x20
    for b in range(256)
)
_LANE_BIT0 = (1).to_bytes(8, "little")
#: Blocks of ``NearDuplicates``: 4 of 16 bits (Manku et al. 2007, k = 3).
_BLOCKS = 4
_BLOCK_BITS = 16
_BLOCK_MASK = (1 << _BLOCK_BITS) - 1
#: Pages of a host checked one by one before its buckets are built: a scan of 32
#: costs about what 4 bucket lookups do, and a small host's page then costs 16 bytes
#: (fingerprint and URL slot) rather than 4 dictionary entries.
_LINEAR_MAX = 32


class _TokenHashes(dict[bytes, bytes]):
    """Token -> its 8-byte BLAKE2b digest; a miss computes it (``__missing__``), so a
    page's lookups run in C (``map(cache.__getitem__, tokens)``) and a cache emptied by
    another thread meanwhile only costs recomputing."""

    def __missing__(self, token: bytes) -> bytes:
        if len(self) >= _TOKEN_CACHE_MAX:
            self.clear()
        digest = blake2b(token, digest_size=8).digest()
        self[token] = digest
        return digest


_token_hashes = _TokenHashes()


def simhash64(text: str) -> int:
    """Charikar's SimHash of ``text``'s word 3-shingles (module docstring).

    Args:
        text: any text; only its first ``MAX_CHARS`` characters are read.

    Returns:
        An unsigned 64-bit int (0 <= fp < 2**64); 0 for a text with no token.
        Equal texts give equal fingerprints in every process and run. Never raises.
    """
    tokens = text[:MAX_CHARS].encode("utf-8", "replace").translate(_TOKENS).split()
    n = len(tokens)
    if n < _SHINGLE:
        return int.from_bytes(_token_hashes[b" ".join(tokens)], "little") if tokens else 0
    hashes = int.from_bytes(b"".join(map(_token_hashes.__getitem__, tokens)), "little")
    lanes = (1 << 64 * n) - 1
    bit0 = int.from_bytes(_LANE_BIT0 * n, "little")  # bit 0 of every 64-bit lane
    bits01 = bit0 * 3
    rotl1 = (hashes << 1) & (lanes ^ bit0) | (hashes >> 63) & bit0
    rotl2 = (hashes << 2) & (lanes ^ bits01) | (hashes >> 62) & bits01
    count = n - _SHINGLE + 1
    features = (rotl2 ^ rotl1 >> 64 ^ hashes >> 128) & ((1 << 64 * count) - 1)
    return _majority(features.to_bytes(8 * count, "little"), count)


def _majority(packed: bytes, count: int) -> int:
    """The majority vote per bit of ``count`` little-endian 64-bit hashes in ``packed``.

    Byte ``p`` of every hash is the column ``packed[p::8]``; read as one big int, its
    bit ``8k + j`` is bit ``j`` of hash ``k``, so one AND with a mask and a
    ``bit_count`` count the hashes with bit ``8p + j`` set. A tie (as many set as
    clear) gives 0.
    """
    every_byte = int.from_bytes(b"\x01" * count, "little")
    masks = [every_byte << j for j in range(8)]
    fp = 0
    for p in range(8):
        column = int.from_bytes(packed[p::8], "little")
        for j, mask in enumerate(masks):
            if 2 * (column & mask).bit_count() > count:
                fp |= 1 << (8 * p + j)
    return fp


def hamming(a: int, b: int) -> int:
    """The number of bits in which the 64-bit fingerprints ``a`` and ``b`` differ."""
    return (a ^ b).bit_count()


def to_signed(fp: int) -> int:
    """An unsigned 64-bit fingerprint as SQLite's signed 64-bit INTEGER stores it.

    ``2**63`` -> ``-2**63``, ``2**64 - 1`` -> ``-1``; values below ``2**63`` unchanged.
    Raises ``ValueError`` when ``fp`` is not in ``[0, 2**64)``.
    """
    if not 0 <= fp <= _MASK:
        raise ValueError(f"not an unsigned 64-bit fingerprint: {fp}")
    return fp - (1 << 64) if fp & _SIGN else fp


def to_unsigned(value: int) -> int:
    """The inverse of ``to_signed``: a signed 64-bit INTEGER back to the fingerprint.

    Raises ``ValueError`` when ``value`` is not in ``[-2**63, 2**63)``.
    """
    if not -_SIGN <= value < _SIGN:
        raise ValueError(f"not a signed 64-bit integer: {value}")
    return value & _MASK


class _Host:
    """One host's fingerprints: ``fps[i]`` is page ``i``'s, ``urls[i]`` its URL, and
    ``buckets`` maps ``block index << 16 | block value`` to the page numbers whose
    fingerprint has that block (an int while there is one, then an ``array('I')``);
    ``None`` while the host has at most ``_LINEAR_MAX`` pages (``fps`` is scanned)."""

    __slots__ = ("buckets", "fps", "urls")

    def __init__(self) -> None:
        self.fps = array("Q")
        self.urls: list[str] = []
        self.buckets: dict[int, int | array[int]] | None = None


def _put(buckets: dict[int, int | array[int]], page: int, fp: int) -> None:
    """Put ``page`` (fingerprint ``fp``) in its 4 buckets."""
    for key in _keys(fp):
        pages = buckets.get(key)
        if pages is None:
            buckets[key] = page
        elif isinstance(pages, int):
            buckets[key] = array("I", (pages, page))
        else:
            pages.append(page)


def _keys(fp: int) -> tuple[int, int, int, int]:
    """The 4 bucket keys of ``fp``: ``block index << 16 | block value``."""
    return (
        fp & _BLOCK_MASK,
        1 << 16 | (fp >> 16) & _BLOCK_MASK,
        2 << 16 | (fp >> 32) & _BLOCK_MASK,
        3 << 16 | fp >> 48,
    )


class NearDuplicates:
    """Near-duplicate lookup per host (Manku, Jain and Das Sarma 2007; module docstring).

    Args:
        max_distance: the largest Hamming distance that counts as a near duplicate,
            0 to 3 (Manku et al. found 3 right for 64-bit fingerprints of web pages).

    Raises:
        ValueError: ``max_distance`` outside 0..3 (4 blocks find at most distance 3).

    Memory per page: 8 bytes for the fingerprint, 8 for the URL's list slot and the
    URL string itself (49 + its length for an ASCII URL); past ``_LINEAR_MAX`` pages of
    a host, 4 bytes of page number in each of its 4 buckets and the buckets: a
    dictionary entry each (about 75 bytes with its key) while a bucket holds one page,
    then an ``array`` (64 bytes and 4 per page). A host has at most 4 x 65 536
    buckets, so the cost per page falls as a host grows. Measured by
    ``benchmarks/simhash_bench.py`` (``tracemalloc``, the URL strings left out), for
    1 000 000 pages: 31 bytes per page over 50 000 hosts of 20 pages, 311 over 1 000
    hosts of 1 000, 76 on one host. Time of a ``find`` (Python, 2-core machine): about
    3 us at 20 or 1 000 pages of the host, 23-31 us at 1 000 000 (a bucket then holds
    about 15 pages, each checked). Not thread-safe: use from one thread.
    """

    def __init__(self, max_distance: int = 3) -> None:
        if not 0 <= max_distance <= _BLOCKS - 1:
            raise ValueError(f"max_distance must be 0 to {_BLOCKS - 1}, not {max_distance}")
        self._max = max_distance
        self._hosts: dict[str, _Host] = {}
        self._count = 0

    def __len__(self) -> int:
        """The number of fingerprints held (all hosts)."""
        return self._count

    def find(self, host: str, fp: int, url: str | None = None) -> str | None:
        """The URL of a page of ``host`` added before whose fingerprint is within
        ``max_distance`` of ``fp`` (the closest; of equally close ones, the first
        added), or ``None``.

        Args:
            host: the host key (any string; hosts never see each other's pages).
            fp: an unsigned 64-bit fingerprint (``simhash64``).
            url: the page asking, never its own answer: a recrawl's revisit of an
                unchanged page is no near duplicate of itself (issue #25 trial 7).
        """
        entry = self._hosts.get(host)
        if entry is None:
            return None
        fps, urls = entry.fps, entry.urls
        best = -1
        best_distance = self._max + 1
        if entry.buckets is None:
            for page, other in enumerate(fps):
                distance = (other ^ fp).bit_count()
                if distance < best_distance and urls[page] != url:
                    best, best_distance = page, distance
            return None if best < 0 else urls[best]
        for key in _keys(fp):
            pages = entry.buckets.get(key)
            if pages is None:
                continue
            for page in (pages,) if isinstance(pages, int) else pages:
                distance = (fps[page] ^ fp).bit_count()
                closer = distance < best_distance or (distance == best_distance and page < best)
                if closer and urls[page] != url:
                    best, best_distance = page, distance
        return None if best < 0 else urls[best]

    def add(self, host: str, fp: int, url: str) -> None:
        """Remember that ``url`` of ``host`` has fingerprint ``fp``.

        A fingerprint already held for ``host`` is not added again (the first URL
        stays the answer of ``find``), so ``len`` counts distinct fingerprints per
        host.

        Raises:
            ValueError: ``fp`` is not an unsigned 64-bit int.
        """
        if not 0 <= fp <= _MASK:
            raise ValueError(f"not an unsigned 64-bit fingerprint: {fp}")
        entry = self._hosts.get(host)
        if entry is None:
            entry = self._hosts[host] = _Host()
        fps = entry.fps
        if entry.buckets is None:
            if fp in fps:
                return
        else:
            first = entry.buckets.get(fp & _BLOCK_MASK)
            if first is not None:
                for page in (first,) if isinstance(first, int) else first:
                    if fps[page] == fp:
                        return
        page = len(fps)
        fps.append(fp)
        entry.urls.append(url)
        self._count += 1
        if entry.buckets is not None:
            _put(entry.buckets, page, fp)
        elif page == _LINEAR_MAX:  # one page too many to scan: index them all
            entry.buckets = {}
            for number, other in enumerate(fps):
                _put(entry.buckets, number, other)
