"""A Hub that is down or failing is one line on stderr, in every command and in the Python API where it raises:
the client's retry lines (huggingface_hub's back-off, urllib3's) never reach stderr, from the command's thread or
from the attempt left to finish in the background. Fresh processes, with the client's real back-off."""

import logging
import os
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

from optimum_ipu_ext.hub.client_logs import RETRY_LOGGERS, quiet_retries
from support import PRESET
from support.hub_fixtures import hub_env

SCRIPT = str(Path(sys.executable).with_name("ipu-config"))
UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing listens there
TOKEN = "hf_a_token_of_no_hub"


def environment(hub_url, tmp_path):
    """A fresh process's environment with its client sent to `hub_url`, a cold cache and a token."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(("HF_", "TRANSFORMERS_"))}
    env.update(hub_env(types.SimpleNamespace(url=hub_url), tmp_path / "hf_home"), HF_TOKEN=TOKEN)
    return env


def run_script(env, *argv):
    return subprocess.run([SCRIPT, *map(str, argv)], capture_output=True, text=True, env=env, timeout=120)


COMMANDS = {
    "place": (["place", PRESET, "--model", "org/model"],
              "Cannot load 'config.json' from Hub repository 'org/model' at revision 'main': no such file or "
              "directory here, and the Hub at {url} cannot be reached"),
    "show": (["show", "org/cfg"], "Cannot load 'ipu_config.json' from Hub repository 'org/cfg' at revision 'main': "
             "no such file or directory here, and the Hub at {url} cannot be reached"),
    "pull": (["pull", "org/cfg", "{tmp}/out"], "Cannot load 'ipu_config.json' from Hub repository 'org/cfg' at "
             "revision 'main': no such file or directory here, and the Hub at {url} cannot be reached"),
    "push": (["push", PRESET, "org/cfg"], "Cannot push the IPU config to Hub repository 'org/cfg': the Hub at {url} "
             "cannot be reached"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_unreachable_hub_is_one_line_naming_what_was_tried(tmp_path, command):
    argv, message = COMMANDS[command]
    result = run_script(environment(UNREACHABLE, tmp_path), *[arg.format(tmp=tmp_path) for arg in argv])
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("ipu-config: error: " + message.format(url=UNREACHABLE)), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr


def test_a_failing_hub_is_one_line_for_a_model(hub_server, tmp_path):
    hub_server.fail_next("/", status=500, times=1000)
    result = run_script(environment(hub_server.url, tmp_path), "place", PRESET, "--model", "org/model")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("ipu-config: error: Cannot load 'config.json' from Hub repository 'org/model'")
    assert "500 Internal Server Error" in result.stderr and result.stderr.count("\n") == 1, result.stderr


PYTHON_API = """\
import time
from optimum_ipu_ext import IPUConfig, PlainIPUConfig

for load in (lambda: IPUConfig.from_pretrained("org/cfg"), lambda: PlainIPUConfig().placement("org/model")):
    try:
        load()
    except OSError as error:
        print(type(error).__name__)
time.sleep(4)  # the client's attempts go on in the background, with 4 s and 8 s of back-off to come
"""


def test_the_python_api_raises_without_the_client_s_retry_lines(tmp_path):
    result = subprocess.run([sys.executable, "-c", PYTHON_API], capture_output=True, text=True,
                            env=environment(UNREACHABLE, tmp_path), timeout=120)
    assert (result.returncode, result.stdout, result.stderr) == (0, "HubUnavailableError\n" * 2, "")


def test_retry_lines_are_dropped_in_the_quiet_thread_only(caplog):
    logger = logging.getLogger(RETRY_LOGGERS[0])
    with caplog.at_level(logging.WARNING, logger=logger.name):
        with quiet_retries():
            with quiet_retries():
                logger.warning("inner")
            logger.warning("after the inner block")
            other = threading.Thread(target=logger.warning, args=("another thread",))
            other.start()
            other.join()
        logger.warning("after the block")
    assert [record.getMessage() for record in caplog.records] == ["another thread", "after the block"]


@pytest.mark.parametrize("name", RETRY_LOGGERS)
def test_each_retry_logger_is_quiet_in_the_block(caplog, name):
    with caplog.at_level(logging.WARNING, logger=name), quiet_retries():
        logging.getLogger(name).warning("Retrying in 1s [Retry 1/5].")
    assert caplog.records == []


QUIET_FIRST = """\
import logging, sys
from optimum_ipu_ext.cli.sources import quiet_client

assert "huggingface_hub" not in sys.modules
quiet_client()
import huggingface_hub.file_download  # what a placement imports after, which configures the client's logger again
print([logging.getLogger(name).getEffectiveLevel() for name in ("huggingface_hub", "transformers", "urllib3")])
"""


def test_the_cli_quiets_the_client_even_before_it_is_imported():
    result = subprocess.run(
        [sys.executable, "-c", QUIET_FIRST], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout == f"{[logging.ERROR] * 3}\n"
