"""Sharded checkpoints: ``checkpoint.py save DIR`` trains an FSDP model for a few steps and
saves its sharded state dict (and the full one, for the check, as DIR/full.safetensors);
``checkpoint.py load DIR`` loads it into an FSDP model on this world size, and on one process
also into the plain model (run by tests/test_distributed.py: saved at 2 ranks, loaded at 1 and
at 3)."""

import os
import sys

import numpy as np
import rumus
import rumus.distributed as dist
import rumus.distributed.checkpoint as dcp
from numpy.testing import assert_array_equal
from rumus import nn
from rumus.distributed.fsdp import FullyShardedDataParallel as FSDP
from rumus.distributed.fsdp import StateDictType
from rumus.distributed.fsdp.wrap import ModuleWrapPolicy

mode, directory = sys.argv[1], sys.argv[2]
dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()


def make_model(seed):
    rumus.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 9), nn.BatchNorm1d(9), nn.Linear(9, 2)
    )


def fsdp(seed):
    return FSDP(make_model(seed), auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))


if mode == "save":
    model = fsdp(0)
    opt = rumus.optim.AdamW(model.parameters(), lr=0.1)
    for step in range(3):
        opt.zero_grad()
        rumus.manual_seed(step)
        model(rumus.randn(6, 5)).pow(2).mean().backward()
        opt.step()
    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        state = {"model": model.state_dict(), "step": 3, "note": "x", "extra": rumus.arange(4)}
        state["optim"] = FSDP.optim_state_dict(model, opt)
        # a failing save (an unsavable value) leaves no new index behind
        try:
            dcp.save({**state, "bad": object()}, checkpoint_id=directory)
        except TypeError:
            pass
        assert not os.path.exists(os.path.join(directory, "index.json"))
        meta = dcp.save(state, checkpoint_id=directory)
        assert meta["world_size"] == n
        dcp.save(state, storage_writer=dcp.FileSystemWriter(directory))  # overwrites in place
    full = model.state_dict()
    full_optim = FSDP.optim_state_dict(model, opt)["state"]
    if rank == 0:
        rumus.save(dict(full), os.path.join(directory, "full.safetensors"))
        rumus.save(full_optim, os.path.join(directory, "optim.safetensors"))
        names = sorted(f for f in os.listdir(directory) if f.endswith(".safetensors"))
        assert len(names) == n + 2, names  # the first save's files were removed
    dist.barrier()
else:
    full = rumus.load(os.path.join(directory, "full.safetensors"), mmap=False)
    full_optim = rumus.load(os.path.join(directory, "optim.safetensors"), mmap=False)
    model = fsdp(1)  # other weights, overwritten by the load
    # the optimizer's state exists after a first step (lr=0 leaves the weights alone)
    opt = rumus.optim.AdamW(model.parameters(), lr=0.0)
    model(rumus.randn(2, 5)).sum().backward()
    opt.step()
    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        state = {
            "optim": FSDP.optim_state_dict(model, opt),
            "model": model.state_dict(),
            "step": 0,
            "note": None,
            "extra": rumus.zeros(4, dtype=rumus.int64),
        }
        dcp.load(state, checkpoint_id=directory)
        model.load_state_dict(state["model"])
        FSDP.optim_state_dict_to_load(model, opt, state["optim"], load_directly=True)
    assert opt.param_groups[0]["lr"] == 0.1 and isinstance(opt.param_groups[0]["betas"], tuple)
    got_optim = FSDP.optim_state_dict(model, opt)["state"]  # gathered (FULL_STATE_DICT)
    assert sorted(got_optim) == sorted(full_optim)
    for name, st in full_optim.items():
        for k, v in st.items():
            assert_array_equal(got_optim[name][k].numpy(), v.numpy(), err_msg=f"{name} {k}")
    assert state["step"] == 3 and state["note"] == "x"
    assert_array_equal(state["extra"].numpy(), np.arange(4))
    got = model.state_dict()
    assert list(got) == list(full)
    for k, v in full.items():
        assert_array_equal(got[k].numpy(), v.numpy(), err_msg=k)
    if n == 1:  # the plain model loads the same checkpoint
        plain = make_model(2)
        sd = {"model": plain.state_dict()}
        dcp.load(sd, storage_reader=dcp.FileSystemReader(directory))
        for k, v in full.items():
            assert_array_equal(plain.state_dict()[k].numpy(), v.numpy(), err_msg=k)
        # a wrong shape or a missing key is a clear error
        for bad, match in [
            ({"model": {"0.weight": rumus.zeros(3)}}, "size mismatch"),
            ({"nope": rumus.zeros(1)}, "Missing key"),
        ]:
            try:
                dcp.load(bad, checkpoint_id=directory)
            except RuntimeError as e:
                assert match in str(e), e
            else:
                raise AssertionError(f"{bad} must raise")

dist.destroy_process_group()
print(f"rank {rank}: checkpoint OK")
