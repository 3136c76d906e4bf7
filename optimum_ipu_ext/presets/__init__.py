"""Preset IPU configurations, shipped in the package (`ipu-config new --list`); the repository's `configs/` links
here."""
