"""``crawldeck attach DB --web PORT`` (issue #25 item 8): the tests that need no server,
process or console (pure logic, the store, virtual time); the others are in
``tests/loopback/test_attach_web.py``."""

from __future__ import annotations

from crawldeck.cli.attach import WebGuard


def test_the_guard_s_rules() -> None:
    open_guard, token_guard = WebGuard(None, 8080), WebGuard("tok", 8080)
    assert open_guard.refusal("/", "127.0.0.1:8080", None) is None
    assert open_guard.refusal("/", "localhost:8080", None) is None
    assert open_guard.refusal("/", "[::1]:8080", None) is None
    assert open_guard.refusal("/", "attacker.example:8080", None) is not None
    assert open_guard.refusal("/ws", "127.0.0.1:8080", "http://127.0.0.1:8080") is None
    assert open_guard.refusal("/ws", "127.0.0.1:8080", "http://127.0.0.1:9999") is not None
    assert token_guard.refusal("/tok/", "10.0.0.5:8080", None) is None
    assert token_guard.refusal("/tok/ws", "10.0.0.5:8080", "http://10.0.0.5:8080") is None
    assert token_guard.refusal("/tokx/", "10.0.0.5:8080", None) is not None
    assert token_guard.refusal("/", "10.0.0.5:8080", None) is not None
