"""`ipu-config` with a reader that goes away (`| head -1`): the files a command writes are written, whole, before
it prints; the command ends quietly with its own exit code, without a traceback, even under `--debug`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from optimum_ipu_ext.cli.output import Stream
from support import PRESET
from support.cli_helpers import run
from support.placement_fixtures import bert_base

SCRIPT = str(Path(sys.executable).with_name("ipu-config"))
ROOT = Path(__file__).resolve().parents[2]
BUILDER = str(ROOT / "examples" / "builder.py") + ":get_options"
ENV = dict(os.environ, HF_HUB_OFFLINE="1")


def run_with_reader_gone(*argv):
    """The console script with its stdout on a pipe whose reader has gone away: (exit code, stderr)."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        result = subprocess.run([SCRIPT, "--debug", *map(str, argv)], stdout=writer, stderr=subprocess.PIPE,
                                text=True, env=ENV, timeout=120)
    finally:
        os.close(writer)
    return result.returncode, result.stderr


def run_read(*argv):
    """The console script with its stdout read whole: (exit code, stdout, stderr)."""
    result = subprocess.run([SCRIPT, *map(str, argv)], capture_output=True, text=True, env=ENV, timeout=120)
    return result.returncode, result.stdout, result.stderr


@pytest.fixture
def bert(tmp_path):
    return bert_base(tmp_path / "bert-base")


def test_import_writes_its_config_whole_for_a_reader_gone(tmp_path):
    arguments = ["--kwarg", "replicas=4", "--set", "layers_per_ipu=[5 7]"]
    code, out, _ = run_read("import", BUILDER, tmp_path / "read", *arguments)
    assert code == 0 and "Imported " in out
    assert run_with_reader_gone("import", BUILDER, tmp_path / "gone", *arguments) == (0, "")
    expected = json.loads((tmp_path / "read" / "ipu_config.json").read_text())
    assert json.loads((tmp_path / "gone" / "ipu_config.json").read_text()) == expected
    assert expected["replication_factor"] == 4


def test_place_balance_writes_its_config_whole_for_a_reader_gone(tmp_path, bert):
    arguments = ["--model", bert, "--balance", "--write"]
    read = tmp_path / "read" / "ipu_config.json"
    gone = tmp_path / "gone" / "ipu_config.json"
    assert run_read("place", PRESET, *arguments, read.parent)[::2] == (0, f"Wrote {read} with layers_per_ipu [4, 8]\n")
    assert run_with_reader_gone("place", PRESET, *arguments, gone.parent) == (
        0, f"Wrote {gone} with layers_per_ipu [4, 8]\n")
    assert json.loads(gone.read_text()) == json.loads(read.read_text())
    assert json.loads(gone.read_text())["layers_per_ipu"] == [4, 8]


def test_plan_writes_its_config_and_picture_whole_for_a_reader_gone(tmp_path, bert):
    arguments = ["--model", bert, "--ipus", "2", "--global-batch-size", "8", "--sequence-length", "16"]
    read, gone = tmp_path / "read", tmp_path / "gone"
    assert run_read("plan", *arguments, "--write", read, "--svg", tmp_path / "read.svg")[0] == 0
    assert run_with_reader_gone("plan", *arguments, "--write", gone, "--svg", tmp_path / "gone.svg") == (
        0, f"Wrote {gone / 'ipu_config.json'}: the best build, rank 1\nWrote {tmp_path / 'gone.svg'}\n")
    assert json.loads((gone / "ipu_config.json").read_text()) == json.loads((read / "ipu_config.json").read_text())
    assert (tmp_path / "gone.svg").read_text() == (tmp_path / "read.svg").read_text()


def test_export_writes_its_file_whole_for_a_reader_gone(tmp_path):
    assert run_read("export", PRESET, "-o", tmp_path / "read.cfg")[0] == 0
    assert run_with_reader_gone("export", PRESET, "-o", tmp_path / "gone.cfg") == (0, "")
    assert (tmp_path / "gone.cfg").read_text() == (tmp_path / "read.cfg").read_text()
    assert "\nreplicationFactor(1)\n" in (tmp_path / "gone.cfg").read_text()


def test_new_writes_its_config_whole_for_a_reader_gone(tmp_path):
    assert run_with_reader_gone("new", "pipelined-2ipu", tmp_path, "--set", "replication_factor=4") == (0, "")
    assert json.loads((tmp_path / "ipu_config.json").read_text())["replication_factor"] == 4


@pytest.mark.parametrize("argv", [
    ["show", PRESET],
    ["show", PRESET, "--json"],
    ["diff", PRESET, "pipelined-2ipu"],
    ["schema"],
    ["new", "--list"],
    ["place", PRESET, "--model", "{bert}", "--balance"],
])
def test_a_command_that_only_prints_ends_quietly_for_a_reader_gone(argv, bert):
    assert run_with_reader_gone(*[arg.format(bert=bert) for arg in argv]) == (0, "")


def test_exit_codes_that_mean_something_are_kept_for_a_reader_gone(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"replication_factor": 0}')
    code, err = run_with_reader_gone("validate", bad, PRESET)
    assert (code, err) == (1, "1 of 2 IPU config(s) invalid\n")
    changed = tmp_path / "four.json"
    changed.write_text('{"replication_factor": 4}')
    assert run_with_reader_gone("diff", PRESET, changed, "--exit-code") == (1, "")


def test_an_error_is_still_one_line_for_a_reader_gone(tmp_path):
    code, err = run_with_reader_gone("show", tmp_path / "missing.json")
    lines = err.splitlines()
    assert code == 1 and lines[-1].startswith("ipu-config: error: ") and "missing.json" in lines[-1]
    assert lines[0] == "Traceback (most recent call last):"  # --debug's traceback, of the error, not of the pipe
    assert "BrokenPipeError" not in err


def test_head_reads_the_first_line_and_the_file_is_written(tmp_path):
    out_dir = tmp_path / "imported"
    command = f"set -o pipefail; {SCRIPT} import {BUILDER} {out_dir} --kwarg replicas=4 | head -1"
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=ENV, timeout=120)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == f"Imported {BUILDER} (training), run on the recorder (no Poplar SDK here)\n"
    assert json.loads((out_dir / "ipu_config.json").read_text())["replication_factor"] == 4


class ClosedPipe:
    """A stream whose reader has gone away: every write raises, as a pipe's does."""

    def __init__(self):
        self.writes = 0

    def write(self, text):
        self.writes += 1
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        pass


def test_a_stream_stops_writing_once_its_reader_is_gone():
    pipe = ClosedPipe()
    stream = Stream(pipe)
    stream.write("first")
    stream.write("second")
    stream.text("third")
    assert (stream.reader_gone, pipe.writes) == (True, 1)


def test_a_command_in_process_ends_with_its_own_code_when_stdout_breaks(capsys, monkeypatch, tmp_path):
    pipe = ClosedPipe()
    monkeypatch.setattr(sys, "stdout", pipe)
    code, _, err = run(capsys, "new", "pipelined-2ipu", tmp_path)
    assert (code, err, pipe.writes) == (0, "", 1)
    assert (tmp_path / "ipu_config.json").is_file()


LATER_PRINT = """\
import sys
from optimum_ipu_ext.cli.output import Stream

Stream(sys.stdout).write("first")
print("a line a library prints later, left in the buffer until Python flushes it at exit")
"""


def test_what_is_printed_after_the_reader_went_away_is_dropped_at_exit_without_a_message():
    reader, writer = os.pipe()
    os.close(reader)
    try:
        result = subprocess.run([sys.executable, "-c", LATER_PRINT], stdout=writer, stderr=subprocess.PIPE, text=True,
                                timeout=60)
    finally:
        os.close(writer)
    assert (result.returncode, result.stderr) == (0, "")
