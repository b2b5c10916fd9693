"""Any config key from the command line and the effective config (issue #14 item 2), and
config errors that name the file, the line and the key (item 6): the tests that start a
real server on loopback or a process; the others are in
``tests/unit/test_cli_config.py``."""

from __future__ import annotations

import json
import sqlite3
import tomllib
from pathlib import Path

from clikit import run

from crawldeck.core.config import asdict, load_config


def test_config_prints_the_effective_config_as_toml_with_each_source(tmp_path: Path) -> None:
    (tmp_path / "my.toml").write_text(
        'scope = "host"\ndelay_ms = 100\n[hosts."docs.example.org"]\ndelay_ms = 5000\n'
    )
    proc = run("config", "--config", "my.toml", "-s", "delay_ms=200", "-s", "max_depth=3",
               "--delay-ms", "300", "--user-agent", "NiceBot/2", "--max-time", "10m",
               cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("# crawldeck's effective config: defaults < --config FILE")
    keys = lines[: lines.index('[hosts."docs.example.org"]')]  # the host tables at the end
    sources = {line.split(" ", 1)[0]: line.rsplit("  # ", 1)[1] for line in keys[1:]
               if line and not line.startswith("#")}  # fmt: skip
    assert {k: v for k, v in sources.items() if v != "default"} == {
        "user_agent": "flag", "max_time_s": "flag",
        "max_depth": "-s", "scope": "file my.toml", "delay_ms": "flag",
    }  # fmt: skip
    assert any(line.startswith("# hosts: 1 host table (file my.toml)") for line in keys)
    assert "# max_pages: not set (default)" in lines
    # the token follows user_agent: a comment, so that it still does in a file (trial 15)
    assert '# robots_token = "NiceBot"  # from user_agent: follows user_agent' in proc.stdout
    assert "delay_ms = 300  # flag" in lines  # a flag wins over -s, -s over the file
    # the output is a TOML file that gives the same config
    (tmp_path / "printed.toml").write_text(proc.stdout)
    config = load_config(tmp_path / "my.toml", {"delay_ms": 300, "user_agent": "NiceBot/2",
                                                "max_time_s": 600}, {"max_depth": 3})  # fmt: skip
    assert load_config(tmp_path / "printed.toml") == config
    printed = tomllib.loads(proc.stdout)
    assert config.robots_token == "NiceBot" and printed["max_time_s"] == 600
    assert set(printed) == {
        k for k, v in asdict(config).items() if v is not None and k != "robots_token"
    }
    without_flag = run("config", "--config", "my.toml", "-s", "delay_ms=200", cwd=tmp_path)
    assert "delay_ms = 200  # -s" in without_flag.stdout.splitlines()


def test_settings_reach_the_crawl(tmp_path: Path) -> None:
    """A crawl records its config in ``runs``: ``-s`` values are in it, typed."""
    proc = run("crawl", "http://127.0.0.1:9/", "--no-ui", "-s", "max_depth=0", "-s",
               "render=never", "-s", "adaptive_delay_factor=0.5", "-s", "max_retries=0",
               cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 3, proc.stderr  # nothing listens on port 9: the seed failed
    conn = sqlite3.connect(tmp_path / "crawl.db")
    [(text,)] = conn.execute("SELECT config FROM runs").fetchall()
    conn.close()
    saved = json.loads(text)
    assert saved["max_depth"] == 0 and saved["render"] == "never"
    assert saved["adaptive_delay_factor"] == 0.5 and saved["max_retries"] == 0


def test_a_directory_as_config_file_in_a_real_process(tmp_path: Path) -> None:
    """Python says ``[Errno 21] Is a directory: 'dir.toml'``; the command does not."""
    (tmp_path / "dir.toml").mkdir()
    proc = run("crawl", "http://127.0.0.1:9/", "--config", "dir.toml", cwd=tmp_path)
    assert proc.returncode == 2
    assert (
        proc.stderr == "crawldeck crawl: error: config file 'dir.toml' is a directory, not a file\n"
    )
