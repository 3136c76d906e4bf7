"""The README's install line and quickstart do what they say, on a machine without the Poplar SDK."""
import contextlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def readme_section(title):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as readme:
        text = readme.read()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end]


def test_the_install_line_pins_the_torch_the_makefile_uses():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as makefile:
        pinned = re.search(r"^TORCH := (torch==\S+)$", makefile.read(), re.MULTILINE).group(1)
    assert pinned == "torch==2.13.0"
    assert re.findall(r"pip install (torch\S*)", readme_section("Install")) == [pinned]


def test_the_quickstart_prints_the_plan_before_to_options_needs_the_sdk(tmp_path):
    quickstart = re.search(r"```python\n(.*?)```", readme_section("Quickstart"), re.DOTALL).group(1)
    os.symlink(os.path.join(ROOT, "configs"), tmp_path / "configs")
    result = subprocess.run([sys.executable, "-c", quickstart], cwd=str(tmp_path), capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.stdout.startswith("import popart\nimport poptorch\n\nopts = poptorch.Options()\n")
    assert "opts.replicationFactor(4)\n" in result.stdout
    assert (tmp_path / "out" / "ipu_config.json").is_file()
    assert result.returncode == 1 and result.stderr.rstrip().splitlines()[-1].startswith(
        "optimum_ipu_ext.errors.PoplarSDKNotFoundError: `to_options()` needs `")


def test_bring_your_own_builder_prints_what_it_says(sdk, tmp_path, monkeypatch):
    code, printed = re.findall(r"```(?:python|text)\n(.*?)```", readme_section("Bring your own builder"), re.DOTALL)
    monkeypatch.chdir(tmp_path)
    with contextlib.redirect_stdout(io.StringIO()) as output:
        exec(code, {"__name__": "readme"})
    assert output.getvalue() == printed
    assert (tmp_path / "imported" / "ipu_config.json").is_file()


def test_the_explicit_pipeline_builds_the_stages_it_shows():
    from optimum_ipu_ext import IPUConfig

    settings, code = re.findall(r"```(?:json|python)\n(.*?)```", readme_section("Execution strategies: stages and phases"),
                                re.DOTALL)
    config = IPUConfig(**json.loads(settings))
    training, inference = (
        [line for line in str(config.options_plan(for_inference=mode)).splitlines() if "setExecutionStrategy" in line]
        for mode in (False, True)
    )
    assert training == code.splitlines()
    assert inference == [code.strip().replace("PipelinedExecution", "ShardedExecution")]


def test_importing_the_reference_build_prints_what_the_readme_says(seed_build, tmp_path):
    section = readme_section("Bring your own builder")
    example = section[section.index("#### Example: the reference build"):]
    command = re.search(r"```bash\n(.*?)\n```", example).group(1)
    printed, warned = re.findall(r"```console\n(.*?)```", example, re.DOTALL)[:2]
    builder = tmp_path / "path" / "to" / "ipu_config.py"
    builder.parent.mkdir(parents=True)
    shutil.copy(seed_build.__file__, builder)
    script = os.path.join(os.path.dirname(sys.executable), "ipu-config")
    result = subprocess.run([script, *shlex.split(command)[1:]], cwd=str(tmp_path), capture_output=True, text=True)
    assert (result.returncode, result.stdout, result.stderr) == (0, printed, warned)


def test_the_imported_reference_build_is_the_preset_it_says(sdk, seed_build, tmp_path):
    from optimum_ipu_ext import IPUConfig
    from optimum_ipu_ext.recorder import run_builder, sdk_modules

    with sdk_modules():
        built = run_builder(seed_build.__file__, "build_ipu_config", {"replication_factor": 4,
                                                                       "optimizer_state_offchip": False}, {})
    with pytest.warns(UserWarning, match="memory proportions of IPU2, IPU3, IPU4, IPU5, IPU6, IPU7"):
        imported = IPUConfig.from_options(training=built, ipus_per_replica=2)
    preset = IPUConfig.from_pretrained(os.path.join(ROOT, "configs", "pipelined-2ipu.json"), replication_factor=4)
    assert imported.options_plan().to_dict() == preset.options_plan().to_dict()
