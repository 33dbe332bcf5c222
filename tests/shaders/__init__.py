"""WGSL shader tests through wgpu-py.

A package, so its conftest does not shadow tests/conftest.py.
"""
