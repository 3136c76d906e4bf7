"""Preset IPU configurations, installed as `optimum_ipu_ext.presets` (`ipu-config new --list`)."""
