"""Any config key from the command line and the effective config (issue #14 item 2),
and config errors that name the file, the line and the key (item 6): ``-s KEY=VALUE``
typed as TOML and checked with the file, ``crawldeck config`` as TOML with each value's
source, and one line for a directory, a binary file, bad UTF-8, bad TOML, a wrong type.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from clikit import main_in

from crawldeck.cli.flags import parse_setting


@pytest.mark.parametrize(
    ("text", "setting"),
    [
        ("delay_ms=2000", ("delay_ms", 2000)),
        (" adaptive_delay_factor = 1.5 ", ("adaptive_delay_factor", 1.5)),
        ("allow_private=true", ("allow_private", True)),
        ("scope=host", ("scope", "host")),
        ('scope="host"', ("scope", "host")),
        ("user_agent=MyBot/1.0 (+https://me.example/bot)",
         ("user_agent", "MyBot/1.0 (+https://me.example/bot)")),
        ("robots_token=123", ("robots_token", "123")),  # a text key keeps its text
        ("render_hosts=a.example, b.example", ("render_hosts", ["a.example", "b.example"])),
        ('render_hosts=["a.example"]', ("render_hosts", ["a.example"])),
        ("strip_params=", ("strip_params", [])),
        ('header={"Accept-Language" = "en"}', ("header", {"Accept-Language": "en"})),
        ("delay_ms=abc", ("delay_ms", "abc")),  # refused later, with the key named
        ("no_such_key=1", ("no_such_key", 1)),
    ],
)  # fmt: skip
def test_a_setting_is_typed_as_toml(text: str, setting: tuple[str, object]) -> None:
    assert parse_setting(text) == setting


@pytest.mark.parametrize("text", ["delay_ms", "=5", ""])
def test_a_setting_without_a_key_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="expected KEY=VALUE"):
        parse_setting(text)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["-s", "delay_ms=abc"],
         "crawldeck config: error: -s: config key 'delay_ms': expected an integer, got 'abc'"),
        (["-s", "delay_ms=-5"],
         "crawldeck config: error: -s: config key 'delay_ms': expected a value >= 0, got -5"),
        (["-s", "delay=5"], "crawldeck config: error: -s: unknown config key 'delay' "
                            "(did you mean 'delay_ms'?)"),
        (["-s", "scope=web"], "crawldeck config: error: -s: config key 'scope': expected one of "
                              "'host', 'domain', 'any', got 'web'"),
        (["-s", "delay_ms"], "crawldeck config: error: argument -s/--set: expected KEY=VALUE "
                             "with a config key (delay_ms=2000), got 'delay_ms' "
                             "(see crawldeck config --help)"),
    ],
)  # fmt: skip
def test_a_bad_setting_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    args: list[str], line: str,
) -> None:  # fmt: skip
    for command in (["config"], ["crawl", "http://127.0.0.1:9/", "--no-ui"]):
        code, out, err = main_in(tmp_path, monkeypatch, capsys, *command, *args)
        assert code == 2
        expected = line.replace("crawldeck config:", f"crawldeck {command[0]}:").replace(
            "crawldeck config --help", f"crawldeck {command[0]} --help"
        )
        assert (err, out) == (expected + "\n", "")
    assert not (tmp_path / "crawl.db").exists()


def _files(tmp_path: Path) -> None:
    (tmp_path / "dir.toml").mkdir()
    (tmp_path / "binary.toml").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00")
    (tmp_path / "latin1.toml").write_bytes(b'delay_ms = 5\nuser_agent = "B\xf6t/1"\n')
    (tmp_path / "broken.toml").write_text("delay_ms = 5\nscope = host\n")
    (tmp_path / "wrong.toml").write_text('# mine\ndelay_ms = 5\n\n[crawl]\nmax_depth = "deep"\n')
    (tmp_path / "unknown.toml").write_text("delay_ms = 5\ndelayy_ms = 6\n")
    (tmp_path / "crawl.toml").write_text("crawl = 5\n")
    (tmp_path / "host.toml").write_text(
        'delay_ms = 5\n\n[hosts."a.org"]\nmax_pages = 9\ndelay_ms = -5\n'
    )
    (tmp_path / "hostkey.toml").write_text(
        '[hosts."b.org"]\nrender = "never"\n[hosts."a.org"]\nbogus = 1\n'
    )


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("missing.toml", "config file 'missing.toml' does not exist"),
        ("dir.toml", "config file 'dir.toml' is a directory, not a file"),
        ("binary.toml", "config file 'binary.toml' is not a text file (it holds NUL bytes)"),
        ("latin1.toml", "config file 'latin1.toml' line 2: not UTF-8 text"),
        ("broken.toml", "config file 'broken.toml' is not valid TOML at line 2, column 9: "
                        "Invalid value"),
        ("wrong.toml", "config file 'wrong.toml' line 5: config key 'max_depth': expected an "
                       "integer, got 'deep'"),
        ("unknown.toml", "config file 'unknown.toml' line 2: unknown config key 'delayy_ms' "
                         "(did you mean 'delay_ms'?)"),
        ("crawl.toml", "config file 'crawl.toml' line 1: config key 'crawl': expected a table"),
        ("host.toml", "config file 'host.toml' line 5: config key 'hosts.\"a.org\".delay_ms': "
                      "expected a value >= 0, got -5"),  # the key's line, not its table's
        ("hostkey.toml", "config file 'hostkey.toml' line 4: config key 'hosts.\"a.org\".bogus': "
                         "unknown (a host table holds delay_ms, max_pages, render)"),
    ],
)  # fmt: skip
def test_a_bad_config_file_is_one_line_naming_the_file_line_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    name: str, line: str,
) -> None:  # fmt: skip
    _files(tmp_path)
    for command in (["config"], ["crawl", "http://127.0.0.1:9/", "--no-ui"]):
        code, out, err = main_in(tmp_path, monkeypatch, capsys, *command, "--config", name)
        assert (code, out, err) == (2, "", f"crawldeck {command[0]}: error: {line}\n")
    assert not (tmp_path / "crawl.db").exists()


def test_a_file_made_by_crawldeck_config_follows_an_edited_user_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trial 15 (issue #25): ``crawldeck config > c.toml`` wrote ``robots_token =
    "crawldeck"`` as a value, so a bot renamed in the file's ``user_agent`` kept matching
    robots.txt groups as ``crawldeck``. While nothing sets it, the token is a comment;
    set, it is a value."""
    code, out, _ = main_in(tmp_path, monkeypatch, capsys, "config", "--max-time", "10m")
    assert code == 0
    assert '\n# robots_token = "crawldeck"  # default: follows user_agent' in out
    edited = out.replace('user_agent = "crawldeck/0.1', 'user_agent = "MyBot/1.0', 1)
    assert edited != out
    (tmp_path / "c.toml").write_text(edited)
    code, out, _ = main_in(tmp_path, monkeypatch, capsys, "config", "--config", "c.toml")
    assert code == 0
    assert '\n# robots_token = "MyBot"  # from user_agent: follows user_agent' in out
    assert "\nmax_time_s = 600  # file c.toml" in out  # the file's other values kept
    code, out, _ = main_in(tmp_path, monkeypatch, capsys, "config", "-s", "robots_token=bot")
    assert '\nrobots_token = "bot"  # -s\n' in out


def test_a_file_made_by_crawldeck_config_takes_a_host_table_added_at_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trial 17 (issue #25): the output held ``hosts = {}  # default``, so the
    ``[hosts."..."]`` table the docs show, added at the end, was refused ("Cannot
    declare ('hosts', ...) twice"). The host tables are TOML tables at the end now, and
    one more is taken."""
    setting = 'hosts={"a.org"={delay_ms=100, render="never"}}'
    code, out, _ = main_in(tmp_path, monkeypatch, capsys, "config", "-s", setting)
    assert code == 0
    assert "\nhosts = " not in out
    assert out.endswith('\n[hosts."a.org"]\ndelay_ms = 100\nrender = "never"\n')
    (tmp_path / "c.toml").write_text(out + '\n[hosts."127.0.0.22:8022"]\ndelay_ms = 5\n')
    code, out, err = main_in(tmp_path, monkeypatch, capsys, "config", "--config", "c.toml")
    assert (code, err) == (0, "")
    assert out.endswith(
        '\n[hosts."a.org"]\ndelay_ms = 100\nrender = "never"\n'
        '\n[hosts."127.0.0.22:8022"]\ndelay_ms = 5\n'
    )
    code, out, _ = main_in(tmp_path, monkeypatch, capsys, "config")  # none: a comment
    assert "\n# hosts: 0 host tables (default); a host's table goes at the end" in out


def test_config_db_shows_what_a_resume_with_no_seed_would_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``config --db FILE``: the crawl file's last run's values, labelled, under what
    ``-s`` and the flags give; its budgets are not carried (issue #25 trial 21: there
    was no way to see what a crawl file used)."""
    from crawldeck.core.storage.store import Store

    with Store(tmp_path / "c.db") as store:
        run = store.begin_run({"delay_ms": 50, "include": ["/library/"], "max_pages": 20})
        store.end_run(run, "max_pages")
    code, out, _ = main_in(tmp_path, monkeypatch, capsys, "config", "--db", "c.db",
                           "-s", "concurrency=4")  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (
        "# crawldeck's effective config: defaults < the crawl file's last run (--db) < "
        "--config FILE < -s KEY=VALUE < flags"
    )
    assert "delay_ms = 50  # crawl file c.db" in lines
    assert 'include = ["/library/"]  # crawl file c.db' in lines
    assert "concurrency = 4  # -s" in lines
    assert "# max_pages: not set (default)" in lines
    code, _, err = main_in(tmp_path, monkeypatch, capsys, "config", "--db", "none.db")
    assert (code, err) == (2, "crawldeck config: error: none.db does not exist or is not a file\n")
