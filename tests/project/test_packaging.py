"""The built wheel ships every subpackage, the presets, the JSON Schema and the console script, and says its licence
and Pythons as current packaging does."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_ships_the_cli_the_presets_and_the_command(tmp_path):
    source = tmp_path / "source"  # a clean copy: a build/ folder left in the checkout would hide a missing package
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".*", "build", "*.egg-info", "__pycache__", "out"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", ".", "-w", str(tmp_path)],
        check=True, cwd=source, capture_output=True, text=True,
    )
    assert "deprecat" not in (built.stdout + built.stderr).lower()
    (wheel,) = tmp_path.glob("optimum_ipu_ext-*.whl")
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    for package in (ROOT / "optimum_ipu_ext").rglob("__init__.py"):
        assert package.relative_to(ROOT).as_posix() in names
    for preset in (ROOT / "configs").glob("*.json"):
        assert f"optimum_ipu_ext/presets/{preset.name}" in names
    assert "optimum_ipu_ext/ipu_config.schema.json" in names
    entry_points = next(name for name in names if name.endswith("entry_points.txt"))
    assert "ipu-config=optimum_ipu_ext.cli:main" in archive.read(entry_points).decode().replace(" ", "")
    metadata = archive.read(next(name for name in names if name.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0\n" in metadata and "License ::" not in metadata
    assert "Requires-Python: >=3.8\n" in metadata
