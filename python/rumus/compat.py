"""Running PyTorch code on rumus unchanged: ``install_torch_alias()`` makes
``import torch`` and every ``import torch.X`` give ``rumus`` and ``rumus.X``.

The alias is a meta-path finder, off unless asked for (``python -m rumus.run``
installs it for a script; notebooks call ``install_torch_alias()``). Modules
that rumus lacks raise ModuleNotFoundError naming both the PyTorch module and
the rumus one it would map to.
"""

import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["install_torch_alias", "remove_torch_alias", "torch_alias_installed"]


class _TorchAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves ``torch[.X]`` to the already-imported module ``rumus[.X]``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        target_name = "rumus" + fullname[len("torch") :]
        try:
            found = importlib.util.find_spec(target_name)
        except ModuleNotFoundError:
            found = None
        if found is None:
            raise ModuleNotFoundError(
                f"No module named '{fullname}': the torch alias maps it to '{target_name}', "
                "which rumus does not have",
                name=fullname,
            )
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        # The rumus module itself: `torch.nn is rumus.nn`, classes keep their names.
        return importlib.import_module("rumus" + spec.name[len("torch") :])

    def exec_module(self, module):
        pass


_ALIAS = _TorchAlias()


def install_torch_alias():
    """From now on ``import torch...`` in this process imports ``rumus...``.
    Modules named torch* that were imported before stay as they are."""
    if _ALIAS not in sys.meta_path:
        sys.meta_path.insert(0, _ALIAS)


def remove_torch_alias():
    """Undoes ``install_torch_alias`` (modules already imported as torch.* stay)."""
    if _ALIAS in sys.meta_path:
        sys.meta_path.remove(_ALIAS)
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        if getattr(sys.modules[name], "__name__", "").startswith("rumus"):
            del sys.modules[name]


def torch_alias_installed():
    """Whether :func:`install_torch_alias` is in effect.

    Returns:
        bool: True if ``import torch`` resolves to rumus in this process.
    """
    return _ALIAS in sys.meta_path
