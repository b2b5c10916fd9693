"""``python -m crawldeck.localweb``: start the local web, print its hosts, serve until Ctrl-C.

Options mirror :class:`localweb.web.LocalWeb`; ``--static DIR`` serves a directory
tree instead (see :class:`localweb.static.StaticSite`). Ctrl-C or SIGTERM stops every
host and exits 0 with one line, no traceback.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from crawldeck.localweb.static import StaticSite
from crawldeck.localweb.web import LocalWeb


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser of ``python -m crawldeck.localweb``."""
    parser = argparse.ArgumentParser(
        prog="python -m crawldeck.localweb",
        description="Serve crawldeck's local multi-host test web on loopback addresses.",
    )
    parser.add_argument("--prefix", default="127.77.0", help="first three address octets")
    parser.add_argument("--delay-scale", type=float, default=1.0, help="scales every delay")
    parser.add_argument("--busy-429-count", type=int, default=3, help="429s from 'busy'")
    parser.add_argument("--retry-after-s", type=int, default=1, help="Retry-After of 'busy'")
    parser.add_argument("--slow-s", type=float, default=0.5, help="delay of 'slow', seconds")
    parser.add_argument("--crawl-delay-s", type=float, default=1.0, help="www Crawl-delay")
    parser.add_argument("--static", type=Path, metavar="DIR", help="serve DIR instead")
    parser.add_argument("--address", default="127.78.0.1", help="address for --static")
    parser.add_argument("--port", type=int, default=0, help="port of every host (0: any free)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run until interrupted; returns the exit status (0, or 2 if nothing could start)."""
    args = build_parser().parse_args(argv)
    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if args.static is not None:
            site = StaticSite(args.static, args.address, args.port)
            with site:
                print(f"static  {site.base_url}/  ({args.static})", flush=True)
                print("Ctrl-C to stop.", flush=True)
                while not done.wait(1.0):
                    pass
        else:
            web = LocalWeb(
                delay_scale=args.delay_scale,
                busy_429_count=args.busy_429_count,
                retry_after_s=args.retry_after_s,
                slow_s=args.slow_s,
                crawl_delay_s=args.crawl_delay_s,
                addresses_prefix=args.prefix,
                port=args.port,
            )
            with web:
                for name, url in web.hosts.items():
                    print(f"{name:<9} {url}/", flush=True)
                print("Ctrl-C to stop.", flush=True)
                while not done.wait(1.0):
                    pass
    except (OSError, ValueError) as exc:
        print(f"localweb: cannot start: {exc}", file=sys.stderr)
        return 2
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("localweb: stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
