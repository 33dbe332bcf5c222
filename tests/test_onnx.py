"""rumus.onnx.export: exported graphs pass the ONNX checker, run in onnxruntime at another batch
size than the traced one, and match rumus's outputs."""

import io
import subprocess
import sys
import warnings

import numpy as np
import pytest
import rumus
import rumus.nn as nn
import rumus.nn.functional as F
import rumus.onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _export(model, args, **kwargs):
    buf = io.BytesIO()
    rumus.onnx.export(model, args, buf, **kwargs)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    return proto


def _run(proto, feeds):
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {k: v.numpy() for k, v in feeds.items()})


def _check(model, x, batch, rtol=1e-5, atol=1e-6, name="input", **kwargs):
    """Export at x's batch size with a dynamic batch axis, run at `batch`."""
    model.eval()
    ax = kwargs.pop("batch_axis", 0)
    dyn = {name: {ax: "batch"}}
    proto = _export(
        model, (x,), input_names=[name], output_names=["out"], dynamic_axes=dyn, **kwargs
    )
    shape = list(x.shape)
    shape[ax] = batch
    y = rumus.randn(*shape) if x.is_floating_point() else rumus.randint(0, 10, shape)
    with rumus.no_grad():
        expected = model(y)
    expected = expected[0] if isinstance(expected, tuple) else expected
    (got,) = _run(proto, {name: y})[:1]
    np.testing.assert_allclose(got, expected.numpy(), rtol=rtol, atol=atol)
    return proto


def _ops(proto):
    return {n.op_type for n in proto.graph.node}


def test_mlp():
    rumus.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 3)
    )
    proto = _check(model, rumus.randn(4, 6), batch=7)
    names = {i.name for i in proto.graph.initializer}
    assert {"0.weight", "0.bias", "2.weight", "4.bias"} <= names
    assert [i.name for i in proto.graph.input] == ["input"]
    assert proto.opset_import[0].version == 17


def test_digits_cnn():
    rumus.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Dropout(0.25),
        nn.Linear(64 * 4 * 4, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )
    with rumus.no_grad():  # non-trivial running statistics
        model[1].running_mean.copy_(rumus.randn(32) * 0.1)
        model[1].running_var.copy_(rumus.rand(32) + 0.5)
    proto = _check(model, rumus.randn(2, 1, 8, 8), batch=5)
    assert {"Conv", "BatchNormalization", "MaxPool", "Gemm"} <= _ops(proto)
    assert "1.running_var" in {i.name for i in proto.graph.initializer}


@pytest.mark.parametrize("opset", [17, 21])
@pytest.mark.parametrize("batch_first", [True, False])
def test_transformer_encoder(batch_first, opset):
    rumus.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=batch_first)
    model = nn.TransformerEncoder(layer, 2)
    x = rumus.randn(3, 5, 16) if batch_first else rumus.randn(5, 3, 16)
    axis = 0 if batch_first else 1
    proto = _check(model, x, batch=6, batch_axis=axis, atol=1e-5, opset_version=opset)
    assert proto.opset_import[0].version == opset
    assert {"MatMul", "Softmax", "LayerNormalization"} <= _ops(proto)


def test_multihead_attention_weights():
    rumus.manual_seed(0)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

        def forward(self, x):
            out, w = self.attn(x, x, x)
            return out + w.sum(-1, keepdim=True)

    _check(M(), rumus.randn(2, 4, 8), batch=3, atol=1e-5)


class _Act(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


_ACTS = {
    "relu": nn.ReLU(),
    "gelu": nn.GELU(),
    "gelu_tanh": nn.GELU(approximate="tanh"),
    "silu": nn.SiLU(),
    "sigmoid": nn.Sigmoid(),
    "tanh": nn.Tanh(),
    "softmax": nn.Softmax(dim=1),
    "log_softmax": nn.LogSoftmax(dim=1),
    "leaky_relu": nn.LeakyReLU(0.2),
    "elu": nn.ELU(),
    "hardswish": _Act(F.hardswish),
    "hardsigmoid": _Act(F.hardsigmoid),
    "relu6": nn.ReLU6(),
    "softplus": nn.Softplus(),
    "mish": _Act(F.mish),
    "selu": _Act(F.selu),
    "relu_inplace": nn.ReLU(inplace=True),
}


@pytest.mark.parametrize("act", sorted(_ACTS))
def test_activations(act):
    _check(nn.Sequential(nn.Linear(5, 5), _ACTS[act]), rumus.randn(3, 5), batch=4)


def test_conv_pool_norm_family():
    rumus.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2, padding=1),
        nn.GroupNorm(2, 8),
        nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1),
        nn.AvgPool2d(2),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.LayerNorm(4),
    )
    proto = _check(model, rumus.randn(2, 3, 8, 8), batch=3)
    assert {"ConvTranspose", "AveragePool", "GlobalAveragePool"} <= _ops(proto)


def test_conv1d_embedding():
    rumus.manual_seed(0)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 6)
            self.conv = nn.Conv1d(6, 4, 3, padding="same")
            self.pool = nn.MaxPool1d(2)

        def forward(self, idx):
            h = self.emb(idx).transpose(1, 2)
            return self.pool(self.conv(h)).amax(-1)

    proto = _check(M(), rumus.randint(0, 10, (2, 8)), batch=5)
    assert "Gather" in _ops(proto)


def test_tensor_ops():
    class M(nn.Module):
        def forward(self, x):
            a = x.view(x.shape[0], 2, 6).permute(0, 2, 1)  # (N, 6, 2)
            b = rumus.cat([a, a * 2.0], dim=2)  # (N, 6, 4)
            c = rumus.stack([b[:, 0], b[:, -1]], 1)  # (N, 2, 4)
            d = c.unsqueeze(1).squeeze(1).flatten(1)  # (N, 8)
            e = d[:, 1:7:2] - d.mean(-1, keepdim=True)  # (N, 3)
            f = rumus.bmm(b.transpose(1, 2), a)  # (N, 4, 2)
            g = f.reshape(-1, 8).sum(1, keepdim=True) / (1 + d.abs().max(1).values.unsqueeze(1))
            h = e.gather(1, (e * 0).long() + rumus.tensor([[2, 0, 1]]))
            i = rumus.where(h > 0, h.exp(), -h).amin(1, keepdim=True)
            j = x.reshape(-1, 3, 4).matmul(rumus.ones(4, 2)).min(dim=1)[0]
            return rumus.cat([e, g, h.clamp(-0.5, 0.5), i, j], 1)

    _check(M(), rumus.randn(3, 12), batch=5)


def test_sdpa():
    class M(nn.Module):
        def forward(self, q):
            return F.scaled_dot_product_attention(q, q * 0.5, q, is_causal=True)

    _check(M(), rumus.randn(2, 2, 4, 8), batch=3)


def test_static_export_to_path(tmp_path):
    model = nn.Linear(3, 2).eval()
    x = rumus.randn(2, 3)
    path = tmp_path / "m.onnx"
    rumus.onnx.export(model, x, str(path))
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto)
    (got,) = _run(proto, {proto.graph.input[0].name: x})
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5)


def test_no_constant_folding_and_no_params():
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)).eval()
    x = rumus.randn(1, 1, 5, 5)
    proto = _export(model, x, do_constant_folding=False)
    (got,) = _run(proto, {"input_0": x})
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    proto = _export(model, x, export_params=False)
    assert not proto.graph.initializer
    assert {"0.weight", "1.running_mean"} <= {i.name for i in proto.graph.input}


def test_training_mode_warns_and_exports_eval():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.BatchNorm1d(4))
    model.train()
    x = rumus.randn(3, 4)
    with pytest.warns(UserWarning, match="training mode"):
        proto = _export(model, x)
    assert model.training  # restored
    assert model[2].num_batches_tracked.item() == 0  # the export did not update statistics
    model.eval()
    (got,) = _run(proto, {"input_0": x})
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _export(model, x)  # eval model: no warning
    proto = _export(model.train(), x, training=rumus.onnx.TrainingMode.TRAINING)
    assert "Dropout" in _ops(proto) and "BatchNormalization" not in _ops(proto)


def test_training_mode_uses_batch_statistics():
    rumus.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.Dropout(0.0)).train()
    x = rumus.randn(4, 2, 5, 5)
    proto = _export(
        model,
        x,
        training=rumus.onnx.TrainingMode.TRAINING,
        input_names=["x"],
        dynamic_axes={"x": {0: "n"}},
    )
    assert model.training and model[1].num_batches_tracked.item() == 0
    y = rumus.randn(6, 2, 5, 5)
    (got,) = _run(proto, {"x": y})
    np.testing.assert_allclose(got, model(y).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_unsupported_op_names_it():
    class M(nn.Module):
        def forward(self, x):
            return x.sort(1).values

    with pytest.raises(rumus.onnx.UnsupportedOperatorError, match="'Tensor.sort'"):
        rumus.onnx.export(M().eval(), rumus.randn(2, 3), io.BytesIO())


def test_data_dependent_python_value_raises():
    class M(nn.Module):
        def forward(self, x):
            return x * float(x.sum())

    with pytest.raises(rumus.onnx.UnsupportedOperatorError, match="__float__|item"):
        rumus.onnx.export(M().eval(), rumus.randn(2, 3), io.BytesIO())


def test_baked_batch_size_raises_with_dynamic_axes():
    class M(nn.Module):
        def forward(self, x):
            return x + rumus.arange(x.shape[0] * 3.0).reshape(-1, 3)

    with pytest.raises(rumus.onnx.UnsupportedOperatorError, match="dynamic axes"):
        rumus.onnx.export(
            M().eval(), rumus.randn(2, 3), io.BytesIO(), input_names=["x"], dynamic_axes={"x": [0]}
        )


def test_bad_arguments():
    model = nn.Linear(3, 2).eval()
    x = rumus.randn(2, 3)
    with pytest.raises(ValueError, match="input_names"):
        rumus.onnx.export(model, x, io.BytesIO(), input_names=["a", "b"])
    with pytest.raises(ValueError, match="output_names"):
        rumus.onnx.export(model, x, io.BytesIO(), output_names=["a", "b"])
    with pytest.raises(TypeError, match="Tensor"):
        rumus.onnx.export(model, (x, 3), io.BytesIO())
    with pytest.raises(TypeError, match="Tensor"):
        rumus.onnx.export(model, [x], io.BytesIO())
    with pytest.raises(ValueError, match="opset"):
        rumus.onnx.export(model, x, io.BytesIO(), opset_version=11)


def test_wrappers_removed_after_export():
    before = rumus.Tensor.__dict__["relu"]
    rumus.onnx.export(nn.ReLU().eval(), rumus.randn(2), io.BytesIO())
    assert rumus.Tensor.__dict__["relu"] is before
    assert F.linear is rumus._rumus.linear
    assert not rumus.onnx.is_in_onnx_export()


def test_opset_18_reductions():
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4)).eval()

    class M(nn.Module):
        def forward(self, x):
            return model(x).amax(1) + x.mean(1)

    proto = _export(M().eval(), rumus.randn(2, 4), opset_version=18)
    x = rumus.randn(2, 4)
    (got,) = _run(proto, {"input_0": x})
    np.testing.assert_allclose(got, M()(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_torch_onnx_alias():
    code = (
        "import rumus, rumus.compat\n"
        "rumus.compat.install_torch_alias()\n"
        "import torch.onnx\n"
        "from torch.onnx import TrainingMode, export\n"
        "assert torch.onnx is rumus.onnx and export is rumus.onnx.export\n"
        "assert TrainingMode.EVAL == 0\n"
        "print('alias ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "alias ok" in out.stdout, out.stdout + out.stderr


def test_more_tensor_ops():
    class M(nn.Module):
        def forward(self, x):  # (N, 4, 6)
            a, b = x.split([2, 2], 1)
            c, d, e = x.chunk(3, -1)
            f = F.pad(a.flip(2), (1, 2), value=0.5)[..., :6]
            g = (b.T.permute(2, 1, 0).mT.mT * c[:, :2].repeat(1, 1, 3)).expand(-1, 2, 6)
            h = x.std(2, keepdim=True) + x.var(2, correction=0, keepdim=True) + x.logsumexp(2, True)
            i = x.prod(2, keepdim=True) + x.argmax(2, keepdim=True).float() - x.min(2, True)[0]
            j = x[:, rumus.tensor([3, 0])] + x.index_select(1, rumus.tensor([1, 2]))
            k = rumus.maximum(d, e).sigmoid().unsqueeze(0).squeeze(0).repeat(1, 2, 3)
            h, i = h[:, :2].expand_as(a), i[:, 1:3].expand_as(a)
            return rumus.cat([f, g, h, i, j, k], 1) ** 2

    _check(M(), rumus.randn(2, 4, 6), batch=3, rtol=1e-4, atol=1e-5)


def test_missed_op_is_caught_by_its_grad_fn():
    class M(nn.Module):
        def forward(self, x):
            # The native module itself is not wrapped: its result must not become a constant.
            return rumus._rumus.softmax(x, 1) + 1

    with pytest.raises(rumus.onnx.UnsupportedOperatorError, match="(?i)softmax"):
        rumus.onnx.export(M().eval(), rumus.randn(2, 3), io.BytesIO())


def test_is_in_onnx_export():
    seen = []

    class M(nn.Module):
        def forward(self, x):
            seen.append(rumus.onnx.is_in_onnx_export())
            return x.relu()

    rumus.onnx.export(M().eval(), rumus.randn(2), io.BytesIO())
    assert seen == [True] and not rumus.onnx.is_in_onnx_export()


def test_transformer_key_padding_mask_dynamic():
    rumus.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    model = nn.TransformerEncoder(layer, 2).eval()

    def inputs(n):
        pad = rumus.zeros(n, 5, dtype=rumus.bool)
        pad[0, 3:] = True
        return rumus.randn(n, 5, 8), pad

    dyn = {"src": {0: "batch"}, "pad": {0: "batch"}}
    x, pad = inputs(2)
    proto = _export(
        model, (x, {"src_key_padding_mask": pad}), input_names=["src", "pad"], dynamic_axes=dyn
    )
    x, pad = inputs(4)
    (got,) = _run(proto, {"src": x, "pad": pad})
    expected = model(x, src_key_padding_mask=pad).detach().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_conv_variants():
    rumus.manual_seed(0)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c3 = nn.Conv3d(2, 3, 3, padding=1)
            self.c2 = nn.Conv2d(6, 4, 3, stride=2, padding=2, dilation=2, groups=2)
            self.t1 = nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1)
            self.c1 = nn.Conv1d(2, 2, 2, stride=1)

        def forward(self, x):  # (N, 2, 2, 6, 6)
            y = self.c3(x).flatten(1, 2)  # (N, 6, 6, 6)
            y = F.max_pool2d(y, 3, 2, 1, ceil_mode=True)  # (N, 6, 4, 4)
            y = self.c2(y)  # (N, 4, 2, 2)
            y = F.avg_pool2d(y, 2, 1, 1, count_include_pad=False)  # (N, 4, 3, 3)
            y = F.adaptive_avg_pool2d(y.repeat(1, 1, 2, 2), (2, 3))  # (N, 4, 2, 3)
            z = self.t1(y.flatten(2))  # (N, 2, 11)
            z = F.avg_pool1d(self.c1(z), 2)  # (N, 2, 5)
            return F.adaptive_max_pool1d(z, 1).flatten(1) + y.mean((2, 3))[:, :2]

    _check(M(), rumus.randn(2, 2, 2, 6, 6), batch=3, atol=1e-5)


def test_opset_and_dynamic_axes_checks():
    model = nn.Linear(3, 2).eval()
    with pytest.raises(ValueError, match="newer"):
        rumus.onnx.export(model, rumus.randn(1, 3), io.BytesIO(), opset_version=999)
    with pytest.warns(UserWarning, match="not a valid input/output name"):
        rumus.onnx.export(model, rumus.randn(1, 3), io.BytesIO(), dynamic_axes={"nope": [0]})


def test_preserve_mode_and_verbose(capsys):
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    x = rumus.randn(1, 2)
    proto = rumus.onnx.export(model.train(), x, None, training=rumus.onnx.TrainingMode.PRESERVE)
    assert "Dropout" in _ops(proto)
    proto = rumus.onnx.export(
        model.eval(), x, None, training=rumus.onnx.TrainingMode.PRESERVE, verbose=True
    )
    assert "Gemm" in capsys.readouterr().out
    assert [n.op_type for n in proto.graph.node] == ["Gemm", "Identity"]


def test_gpu_model_exports(gpu):
    rumus.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten()).eval()
    x = rumus.randn(2, 1, 5, 5)
    expected = model(x).detach().numpy()
    model.to(gpu)
    proto = _export(model, x.to(gpu), input_names=["x"], dynamic_axes={"x": [0]})
    (got,) = _run(proto, {"x": x})
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_math_extras():
    class M(nn.Module):
        def forward(self, x):  # (N, 3, 3)
            a = x.abs().log1p() + x.expm1() + x.exp2() + x.triu(1) + x.tril() + x.cumsum(-1)
            b = rumus.baddbmm(x, x, x, beta=0.5, alpha=2.0) + rumus.einsum("nij->nji", x)
            c = ((x * 3).long() // 2 + (-7) // ((x > 0).long() + 1)).float()
            return a + b + c + rumus.addmm(x[0], x[0], x[0]) + F.normalize(x, dim=1)

    _check(M(), rumus.randn(2, 3, 3), batch=4, rtol=1e-5, atol=1e-5)


def test_in_place_ops():
    class M(nn.Module):
        def forward(self, x):
            y = x * 1.0
            y.exp_().add_(1.0).mul_(x.abs()).sqrt_()
            y += 1
            return F.relu(y, inplace=True) + x

    _check(M(), rumus.randn(2, 3), batch=3)


def test_in_place_write_through_a_view_raises():
    class M(nn.Module):
        def forward(self, x):
            y = x * 2
            y.view(-1).clamp_(min=0)  # changes y too
            return y + 1

    # Integer tensors carry no autograd history, so rumus itself allows the write.
    with pytest.raises(rumus.onnx.UnsupportedOperatorError, match="view"):
        rumus.onnx.export(M().eval(), rumus.randint(-3, 3, (2, 3)), io.BytesIO())


def test_other_threads_run_untouched_during_export():
    import threading

    go, done, errors = threading.Event(), threading.Event(), []

    def train():  # autograd work while the export's wrappers are in place
        go.wait()
        try:
            w = rumus.randn(3, requires_grad=True)
            ((w * 2).relu().sum()).backward()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
        done.set()

    class M(nn.Module):
        def forward(self, x):
            go.set()
            assert done.wait(60)
            return x + 1

    t = threading.Thread(target=train)
    t.start()
    rumus.onnx.export(M().eval(), rumus.randn(2, 3), io.BytesIO())
    t.join()
    assert not errors, errors
