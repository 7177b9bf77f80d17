"""Readers and careful writers of host files, always under `--host-root`."""
