"""Prometheus metrics of a running crawl (``--metrics-port``, issue #14 item 8).

``MetricsServer`` serves the Prometheus text format on ``http://ADDRESS:PORT/metrics``
(``prometheus_client.start_http_server``: a thread of its own, a ``CollectorRegistry``
of its own, so two crawls in one process do not share metrics) while a run lasts.
Nothing is added to the engine's hot path: the engine publishes a snapshot every
``snapshot_interval_ms`` (``Engine.subscribe``); on the event loop, at most once a
second and at the end of the run, ``MetricsServer`` takes that snapshot's counters and
the observer's figures of the run (``Engine.statistics().observer.run``, made of
``core.crawl.stats.RunTally``'s O(1) counts per recorded fetch) into one frozen view, which
the scrape thread reads (one attribute read: no lock, nothing of the loop's state
touched from the thread).

Every ``_total`` counter counts this run (this process), as Prometheus counters do:

* ``crawldeck_pages_total``: page fetches recorded (responses and final failures);
* ``crawldeck_responses_total{status="200"}``: responses by HTTP status;
* ``crawldeck_transport_errors_total{reason="timeout"}``: fetches without an answer;
* ``crawldeck_response_body_bytes_total``: the responses' decoded bodies, bytes;
* ``crawldeck_blocked_total{reason="robots"}``: URLs refused, by ``blocked.reason``;
* ``crawldeck_retries_total{reason="http_429"}``: tries put back for another one;
* ``crawldeck_robots_txt_fetched_total``: origins whose robots.txt was requested;
* ``crawldeck_fetch_duration_seconds``: a histogram of the recorded fetches'
  durations (``core.crawl.stats.LATENCY_BUCKETS_S``, Prometheus' default buckets);

and the gauges: ``crawldeck_frontier_urls{where="memory"|"spilled"}`` (queued URLs in
memory and waiting in SQLite only), ``crawldeck_fetches_in_flight``,
``crawldeck_hosts_active``, ``crawldeck_hosts_in_backoff``. Names follow Prometheus'
conventions (https://prometheus.io/docs/practices/naming/: base units, ``_total``
for counters, ``_seconds``, ``_bytes``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from crawldeck.core.crawl.engine import Engine
from crawldeck.core.crawl.snapshot import Counters, CrawlSnapshot
from crawldeck.core.crawl.stats import NO_FIGURES, RunFigures
from crawldeck.core.errors import ConfigError

#: Seconds between two refreshes of the metrics from the snapshots (a Prometheus
#: scrape interval is 15 s or more; the console publishes 4 snapshots a second).
REFRESH_S = 1.0


@dataclass(frozen=True, slots=True)
class MetricsView:
    """What one scrape reports: the last snapshot's counters and the run's figures."""

    counters: Counters | None
    run: RunFigures


class _CrawlCollector(Collector):
    """The metrics of a ``MetricsServer``'s current view, made at each scrape."""

    def __init__(self, view: Callable[[], MetricsView]) -> None:
        self._view = view

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily]:
        """The metric families of the view now (called in the server's thread)."""
        view = self._view()
        run = view.run
        yield CounterMetricFamily(
            "crawldeck_pages", "page fetches recorded this run (responses and final failures)",
            value=run.pages,
        )  # fmt: skip
        yield _by_label(
            "crawldeck_responses", "responses this run by HTTP status", "status",
            [(str(status), count) for status, count in run.responses_by_status],
        )  # fmt: skip
        yield _by_label(
            "crawldeck_transport_errors", "fetches this run without an HTTP answer, by reason",
            "reason", run.transport_errors,
        )  # fmt: skip
        yield CounterMetricFamily(
            "crawldeck_response_body_bytes", "decoded body bytes of this run's responses",
            value=run.body_bytes,
        )  # fmt: skip
        yield _by_label(
            "crawldeck_blocked", "URLs refused this run, by reason", "reason", run.blocked
        )
        yield _by_label(
            "crawldeck_retries", "tries put back for another one this run, by reason",
            "reason", run.retries,
        )  # fmt: skip
        yield CounterMetricFamily(
            "crawldeck_robots_txt_fetched", "origins whose robots.txt this run requested",
            value=run.robots_txt_fetched,
        )  # fmt: skip
        latency = run.latency
        yield HistogramMetricFamily(
            "crawldeck_fetch_duration_seconds",
            "duration of each recorded page fetch, request start to body end, seconds",
            buckets=[(_le(bound), count) for bound, count in latency.buckets],
            sum_value=latency.sum_s,
        )
        c = view.counters
        frontier = GaugeMetricFamily(
            "crawldeck_frontier_urls", "URLs queued, in memory or spilled to SQLite",
            labels=["where"],
        )  # fmt: skip
        if c is not None:
            frontier.add_metric(["memory"], c.queued - c.spilled)
            frontier.add_metric(["spilled"], c.spilled)
        yield frontier
        for name, doc, value in (
            ("crawldeck_fetches_in_flight", "URLs being fetched or recorded now", "in_flight"),
            ("crawldeck_hosts_active", "hosts with URLs queued or in flight", "hosts_active"),
            ("crawldeck_hosts_in_backoff", "hosts waiting out a backoff now", "hosts_backoff"),
        ):
            gauge = GaugeMetricFamily(name, doc)
            if c is not None:
                gauge.add_metric([], getattr(c, value))
            yield gauge


def _by_label(
    name: str, documentation: str, label: str, counts: Iterable[tuple[str, int]]
) -> CounterMetricFamily:
    """A counter family ``name`` with one sample per ``(label value, count)``."""
    family = CounterMetricFamily(name, documentation, labels=[label])
    for value, count in counts:
        family.add_metric([value], count)
    return family


def _le(bound: float) -> str:
    """A bucket's ``le`` label: ``+Inf`` or the bound as Prometheus' client writes it."""
    return "+Inf" if bound == float("inf") else repr(bound)


class MetricsServer:
    """The metrics of one crawl, served over HTTP while it runs.

    Args:
        port: the TCP port (1-65535).
        address: the IP address to bind (``metrics_address``: ``127.0.0.1`` unless
            configured otherwise).
        clock: monotonic seconds, for the refresh interval (``REFRESH_S``): the
            server answers scrapes in a thread of its own, outside the crawl's loop and
            its clock, and the interval is only a rate limit (nothing is scheduled on
            it or stored).

    ``start`` binds and serves (a thread); ``watch(engine)`` feeds it the engine's
    snapshots; ``close`` (or the ``with`` block's end) shuts the server down and joins
    its thread.
    """

    def __init__(
        self, port: int, address: str, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.port = port
        self.address = address
        self._clock = clock
        self.registry = CollectorRegistry(auto_describe=False)
        self._view = MetricsView(None, NO_FIGURES)
        self.registry.register(_CrawlCollector(lambda: self._view))
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None
        self._refreshed_at: float | None = None

    def start(self) -> None:
        """Bind ``address:port`` and serve ``/metrics`` in a thread.

        Raises:
            ConfigError: the port cannot be bound (in use, no permission, an address
                not of this machine), one line naming the flag and the reason.
        """
        try:
            self._server, self._thread = start_http_server(
                self.port, self.address, registry=self.registry
            )
        except OSError as exc:
            why = exc.strerror or str(exc)
            raise ConfigError(
                f"--metrics-port {self.port}: cannot listen on {self.address}:{self.port} ({why})"
            ) from None

    def watch(self, engine: Engine) -> None:
        """Refresh the metrics from ``engine``'s snapshots (at most every
        ``REFRESH_S``, and at each snapshot of a run that ended or is stopping), and
        from its state now."""

        def refresh(snap: CrawlSnapshot) -> None:
            now = self._clock()
            last = self._refreshed_at
            if last is not None and now - last < REFRESH_S and snap.state in ("running", "paused"):
                return
            self._refreshed_at = now
            self._view = MetricsView(snap.counters, engine.statistics().observer.run)

        engine.subscribe(refresh)
        refresh(engine.snapshot())  # the seeds queued, before the first snapshot

    def close(self) -> None:
        """Stop serving and join the thread (at most one poll interval, 0.5 s);
        idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()

    def __enter__(self) -> MetricsServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


__all__ = ["REFRESH_S", "MetricsServer", "MetricsView"]
