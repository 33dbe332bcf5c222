"""``python -m rumus.run script.py args...`` (or ``-m module args...``): runs a
PyTorch script unchanged on rumus, with ``torch`` and every ``torch.*`` import
resolved to ``rumus`` and ``rumus.*`` (see rumus.compat)."""

import os
import runpy
import sys

from .compat import install_torch_alias

USAGE = "usage: python -m rumus.run script.py [args...]  |  python -m rumus.run -m module [args...]"


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    install_torch_alias()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    script = argv[0]
    if not os.path.exists(script):
        print(f"rumus.run: can't open file {script!r}: no such file", file=sys.stderr)
        return 2
    sys.argv = argv
    # As `python script.py` does: the script's directory comes first on the path.
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
