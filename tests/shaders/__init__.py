"""WGSL shader tests through wgpu-py (a package, so its conftest does not shadow tests/conftest.py)."""
