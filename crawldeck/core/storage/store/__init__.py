"""The SQLite crawl file: its schema and every read and write of it.

A package (issue #24 item 4; it was one 2 700-line module), by role:

* ``schema``: the tables, views and indexes (the schema's documentation is its
  docstring), ``check_header``/``check_schema`` and the upgrade of older versions.
* ``lock``: one ``Store`` per file, whatever its names (``flock`` and the process's
  registry of open files).
* ``ops``: the SQL that writes, and one frozen dataclass per writer operation
  (``RecordPage``, ``Enqueue``, ...), each applied by its ``apply`` method.
* ``writer``: the queue, its back-pressure and the writer thread that commits the
  operations in batches.
* ``reads``: what resume, export, ``show``, recrawl, stats and the console read.
* ``facade``: ``Store``, the one class the rest of crawldeck uses (it plays every role
  of ``core.protocols.StoreRoles`` but the WARC home).

The records written and read (``PageRecord``, ``FrontierRow``, ...) are in
``core.records``; they are importable from here too, for the readers of crawl files.
"""

from __future__ import annotations

from crawldeck.core.records import (
    FRONTIER_STATES,
    PARTIAL_ERROR,
    SPILL_SEQ_SPAN,
    BlockedRecord,
    BrokenGroup,
    Counts,
    FrontierRow,
    FrontierState,
    HostRecord,
    LinkCheck,
    PageRecord,
    SeedOutcome,
    SitemapRecord,
    SitemapUrlRecord,
    from_iso_utc,
    status_class,
    status_mix,
    to_iso_utc,
)
from crawldeck.core.storage.store.facade import MAX_BACKLOG_OPS, Store
from crawldeck.core.storage.store.reads import READ_BATCH_ROWS
from crawldeck.core.storage.store.schema import (
    BROKEN_ALL_SELECT,
    BROKEN_BLOCK_REASONS,
    BROKEN_LINKS_SELECT,
    BROKEN_LINKS_SQL,
    BROKEN_SEEDS_FROM,
    BROKEN_TARGET_SQL,
    HOST_SUMMARY_SQL,
    PAGE_COLUMNS_V2,
    PAGE_SUMMARY_SQL,
    RENAMED_COLUMNS,
    SCHEMA_VERSION,
    UPGRADABLE_VERSIONS,
    anchor_select,
    check_header,
    check_schema,
    connect_reader,
    is_sqlite_file,
)
from crawldeck.core.storage.store.writer import MAX_BATCH_OPS

__all__ = [
    "BROKEN_ALL_SELECT",
    "BROKEN_BLOCK_REASONS",
    "BROKEN_LINKS_SELECT",
    "BROKEN_LINKS_SQL",
    "BROKEN_SEEDS_FROM",
    "BROKEN_TARGET_SQL",
    "FRONTIER_STATES",
    "HOST_SUMMARY_SQL",
    "MAX_BACKLOG_OPS",
    "MAX_BATCH_OPS",
    "PAGE_COLUMNS_V2",
    "PAGE_SUMMARY_SQL",
    "PARTIAL_ERROR",
    "READ_BATCH_ROWS",
    "RENAMED_COLUMNS",
    "SCHEMA_VERSION",
    "SPILL_SEQ_SPAN",
    "UPGRADABLE_VERSIONS",
    "BlockedRecord",
    "BrokenGroup",
    "Counts",
    "FrontierRow",
    "FrontierState",
    "HostRecord",
    "LinkCheck",
    "PageRecord",
    "SeedOutcome",
    "SitemapRecord",
    "SitemapUrlRecord",
    "Store",
    "anchor_select",
    "check_header",
    "check_schema",
    "connect_reader",
    "from_iso_utc",
    "is_sqlite_file",
    "status_class",
    "status_mix",
    "to_iso_utc",
]
