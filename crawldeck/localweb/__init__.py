"""A local multi-host web on loopback addresses for crawldeck's tests, benchmarks and demo.

- :class:`LocalWeb` (:mod:`localweb.web`): eight generated hosts (``www``, ``traps``,
  ``norobots``, ``flaky``, ``moved``, ``busy``, ``slow``, ``spa``) and their ground truth,
  :class:`Expected`.
- :class:`StaticSite` / :func:`serve_static` (:mod:`localweb.static`): a directory tree
  served as one or several hosts.
- :class:`HostServer`, :class:`Access` (:mod:`localweb.server`): the HTTP/1.1 server
  behind both, and its access-log records.

``python -m crawldeck.localweb`` serves the web until Ctrl-C.
"""

from crawldeck.localweb.server import Access, AccessLog, HostServer, Request, Response, start_hosts
from crawldeck.localweb.static import StaticSite, serve_static
from crawldeck.localweb.web import HOST_NAMES, Expected, LocalWeb

__all__ = [
    "HOST_NAMES",
    "Access",
    "AccessLog",
    "Expected",
    "HostServer",
    "LocalWeb",
    "Request",
    "Response",
    "StaticSite",
    "serve_static",
    "start_hosts",
]
