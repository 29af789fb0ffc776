"""``seaway bench cli`` at a tiny size: the command's start against an empty interpreter, each
figure there and positive, and each "beyond" the difference of its two times."""

from __future__ import annotations

import json

from tests.cli.conftest import Cli


def test_bench_cli_reports_the_commands_start_against_an_empty_interpreter(cli: Cli) -> None:
    ran = cli("bench", "cli", "--runs", "2", "--json")
    assert ran.status == 0, ran.err
    figures = json.loads(ran.out)
    assert figures["runs"] == 2 and figures["help_target_s"] == 0.3 and figures["log_append_target_s"] == 0.5
    for name in ("empty_interpreter_s", "help_s", "log_append_s", "help_cpu_s", "log_append_cpu_s"):
        assert isinstance(figures[name], float) and figures[name] > 0, figures
    # A command does more than an empty interpreter, and an append (which opens a store) more than --help.
    assert figures["empty_interpreter_s"] < figures["help_s"] < figures["log_append_s"], figures
    for command in ("help", "log_append"):
        beyond = figures[f"{command}_s"] - figures["empty_interpreter_s"]
        assert abs(figures[f"{command}_beyond_interpreter_s"] - beyond) < 0.001, figures


def test_bench_cli_options_are_checked(cli: Cli) -> None:
    ran = cli("bench", "cli", "--runs", "0")
    assert ran.status == 2 and "[INVALID_ARGUMENT]" in ran.err
