#!/usr/bin/env python
"""Many single ops on the CPU, rumus beside PyTorch (when installed): about 200
calls that models make (elementwise math, reductions, indexing, shapes, nn
functional ops, linear algebra, creation, and tiny-tensor overhead), each
library timed in its own process, alternating, medians of the rounds, printed
as a table of rumus/torch time ratios, worst first.

This finds where rumus trails: bench_core.py and bench_nn.py measure the big
kernels and whole training steps. Nothing here asserts a speed.

    .venv/bin/python benches/bench_ops.py                 # all ops, 3 rounds
    .venv/bin/python benches/bench_ops.py --only gather,softmax --rounds 5

Each op runs without autograd recording, on inputs made outside the timing
(1M-element vectors, 1024² matrices, small images); an op one library lacks
shows "-" instead of a time.
"""

import argparse
import json
import statistics
import sys

from harness import WORKER_TIMING, libraries, run_workers

SETUP = r"""
N=1<<20
f32 = lambda *s: rng.standard_normal(s).astype("float32")
a, b = f32(N), f32(N)
p=(rng.random(N).astype("float32")+0.1)
M, M2 = f32(1024, 1024), f32(1024, 1024)
row = f32(1024)
ia=rng.integers(0,1000,N).astype("int64"); ib=rng.integers(1,1000,N).astype("int64")
idx=rng.integers(0,1024,4096).astype("int64")
img, w3 = f32(32, 16, 32, 32), f32(16, 16, 3, 3)
vol = f32(4, 8, 16, 32, 32)
seq = f32(32, 64, 128)
heads = f32(4, 8, 256, 64)
small = f32(64)
m64 = f32(64, 64)
spd = (m64 @ m64.T + 64 * np.eye(64)).astype("float32")
lab, logits = rng.integers(0, 100, 4096), f32(4096, 100)
emb, tok = f32(10000, 128), rng.integers(0, 10000, (64, 128))
mask=rng.random(N)>0.5
t=lambda x: T.from_numpy(x.copy())
A,B,P,MM,MM2,ROW=t(a),t(b),t(p),t(M),t(M2),t(row)
IA,IB,IDX=t(ia),t(ib),t(idx); IMG,W3,VOL,SEQ,HEADS=t(img),t(w3),t(vol),t(seq),t(heads)
S, S2, M64, SPD = t(small), t(small[::-1]), t(m64), t(spd)
LAB, LOG, EMB, TOK = t(lab), t(logits), t(emb), t(tok)
MASK=t(mask); HA=A.half(); BA=A.bfloat16(); AD=A.double(); AI32=IA.int()
ARG=MM.argsort(dim=1)
"""
OPS = [
    ("abs", "T.abs(A)"),
    ("neg", "-A"),
    ("exp", "T.exp(A)"),
    ("log", "T.log(P)"),
    ("sqrt", "T.sqrt(P)"),
    ("rsqrt", "T.rsqrt(P)"),
    ("sin", "T.sin(A)"),
    ("cos", "T.cos(A)"),
    ("tan", "T.tan(A)"),
    ("tanh", "T.tanh(A)"),
    ("sigmoid", "T.sigmoid(A)"),
    ("relu", "T.relu(A)"),
    ("gelu", "F.gelu(A)"),
    ("silu", "F.silu(A)"),
    ("erf", "T.erf(A)"),
    ("erfinv", "T.erfinv(P*0.5)"),
    ("log1p", "T.log1p(P)"),
    ("expm1", "T.expm1(A)"),
    ("atan", "T.atan(A)"),
    ("asin", "T.asin(P*0.5)"),
    ("acos", "T.acos(P*0.5)"),
    ("sinh", "T.sinh(A)"),
    ("cosh", "T.cosh(A)"),
    ("asinh", "T.asinh(A)"),
    ("atanh", "T.atanh(P*0.5)"),
    ("acosh", "T.acosh(P + 1.0)"),
    ("floor", "T.floor(A)"),
    ("round", "T.round(A)"),
    ("sign", "T.sign(A)"),
    ("reciprocal", "T.reciprocal(P)"),
    ("square", "T.square(A)"),
    ("lgamma", "T.lgamma(P)"),
    ("digamma", "T.digamma(P)"),
    ("clamp", "T.clamp(A,-0.5,0.5)"),
    ("pow2.5", "T.pow(P,2.5)"),
    ("exp2", "T.exp2(A)"),
    ("log2", "T.log2(P)"),
    ("log10", "T.log10(P)"),
    ("sinc", "T.sinc(A)"),
    ("logit", "T.logit(P*0.5)"),
    ("nan_to_num", "T.nan_to_num(A)"),
    ("hardswish", "F.hardswish(A)"),
    ("softplus", "F.softplus(A)"),
    ("elu", "F.elu(A)"),
    ("leaky_relu", "F.leaky_relu(A)"),
    ("mish", "F.mish(A)"),
    ("hardtanh", "F.hardtanh(A)"),
    ("add", "A+B"),
    ("mul", "A*B"),
    ("div", "A/B"),
    ("sub", "A-B"),
    ("maximum", "T.maximum(A,B)"),
    ("pow", "T.pow(P,B)"),
    ("atan2", "T.atan2(A,B)"),
    ("fmod", "T.fmod(A,P)"),
    ("remainder", "T.remainder(A,P)"),
    ("where", "T.where(MASK,A,B)"),
    ("lerp", "T.lerp(A,B,0.3)"),
    ("hypot", "T.hypot(A,B)"),
    ("eq", "A==B"),
    ("lt", "A<B"),
    ("addcmul", "T.addcmul(A,A,B,value=0.5)"),
    ("add_scalar", "A+1.5"),
    ("iadd", "A.add_(B)"),
    ("add_row", "MM+ROW"),
    ("add_col", "MM+ROW[:,None]"),
    ("add_T", "MM+MM2.T"),
    ("int_add", "IA+IB"),
    ("int_div", "IA//IB"),
    ("int_mul", "IA*IB"),
    ("int_rem", "IA%IB"),
    ("bitand", "IA&IB"),
    ("logical_and", "T.logical_and(MASK,MASK)"),
    ("f2i", "A.long()"),
    ("i2f", "IA.float()"),
    ("f2h", "A.half()"),
    ("h2f", "HA.float()"),
    ("f2bf", "A.bfloat16()"),
    ("bf2f", "BA.float()"),
    ("f2d", "A.double()"),
    ("h_add", "HA+HA"),
    ("bf_mul", "BA*BA"),
    ("d_exp", "T.exp(AD)"),
    ("d_sin", "T.sin(AD)"),
    ("d_add", "AD+AD"),
    ("sum", "MM.sum()"),
    ("mean", "MM.mean()"),
    ("sum0", "MM.sum(0)"),
    ("sum1", "MM.sum(1)"),
    ("max", "MM.max()"),
    ("max_dim", "MM.max(1)"),
    ("argmax", "MM.argmax(1)"),
    ("argmax0", "MM.argmax(0)"),
    ("std", "MM.std()"),
    ("var1", "MM.var(1)"),
    ("norm", "T.linalg.norm(MM)"),
    ("logsumexp", "T.logsumexp(MM,1)"),
    ("prod1", "MM.prod(1)"),
    ("cumsum1", "MM.cumsum(1)"),
    ("cumsum0", "MM.cumsum(0)"),
    ("cumprod1", "MM.cumprod(1)"),
    ("softmax", "T.softmax(MM,-1)"),
    ("softmax0", "T.softmax(MM,0)"),
    ("log_softmax", "F.log_softmax(MM,-1)"),
    ("topk", "MM.topk(10,1)"),
    ("sort", "MM.sort(1)"),
    ("argsort", "MM.argsort(1)"),
    ("median", "MM.median(1)"),
    ("kthvalue", "MM.kthvalue(10,1)"),
    ("any", "MASK.any()"),
    ("all", "MASK.all()"),
    ("count_nz", "T.count_nonzero(MM)"),
    ("amax0", "MM.amax(0)"),
    ("min1", "MM.min(1)"),
    ("isum", "IA.sum()"),
    ("h_sum", "HA.sum()"),
    ("mean_dims", "IMG.mean((2,3))"),
    ("index_select", "MM.index_select(0,IDX)"),
    ("gather", "MM.gather(1,ARG)"),
    ("scatter_add", "T.zeros(1024,1024).scatter_add_(1,ARG,MM)"),
    ("masked_fill", "A.masked_fill(MASK,0.0)"),
    ("bool_index", "A[MASK]"),
    ("int_index", "MM[IDX]"),
    ("index_put", "MM.index_put_((IDX,),T.ones(1024))"),
    ("take", "T.take(MM,IDX)"),
    ("nonzero", "MASK.nonzero()"),
    ("masked_select", "T.masked_select(A,MASK)"),
    ("index_add", "T.zeros(1024,1024).index_add_(0,IDX,T.ones(4096,1024))"),
    ("cat", "T.cat([MM,MM2],0)"),
    ("cat1", "T.cat([MM,MM2],1)"),
    ("stack", "T.stack([MM,MM2])"),
    ("Tcontig", "MM.t().contiguous()"),
    ("permute", "IMG.permute(0,2,3,1).contiguous()"),
    ("flip", "MM.flip(1)"),
    ("roll", "T.roll(MM,5,1)"),
    ("repeat", "MM[:64].repeat(4,4)"),
    ("expand", "ROW.expand(1024,1024).contiguous()"),
    ("tril", "T.tril(MM)"),
    ("pad", "F.pad(IMG,(1,1,1,1))"),
    ("clone", "MM.clone()"),
    ("chunk", "[c.contiguous() for c in MM.chunk(4,1)]"),
    ("repeat_interleave", "T.repeat_interleave(MM[:256],2,0)"),
    ("diag", "T.diag(MM)"),
    ("unfold", "F.unfold(IMG,3)"),
    ("conv2d", "F.conv2d(IMG,W3,padding=1)"),
    ("conv2d_s2", "F.conv2d(IMG,W3,stride=2)"),
    ("conv1d", "F.conv1d(SEQ,T.ones(64,64,3),padding=1)"),
    ("conv_t2d", "F.conv_transpose2d(IMG,W3,stride=2)"),
    ("dwconv", "F.conv2d(IMG,W3[:,:1],padding=1,groups=16)"),
    ("max_pool2d", "F.max_pool2d(IMG,2)"),
    ("max_pool2d_3s2", "F.max_pool2d(IMG,3,2,1)"),
    ("avg_pool2d", "F.avg_pool2d(IMG,2)"),
    ("adaptive_avg", "F.adaptive_avg_pool2d(IMG,(7,7))"),
    ("adaptive_max", "F.adaptive_max_pool2d(IMG,(7,7))"),
    ("max_pool3d", "F.max_pool3d(VOL,2)"),
    ("avg_pool3d", "F.avg_pool3d(VOL,2)"),
    ("max_pool1d", "F.max_pool1d(SEQ,2)"),
    ("layer_norm", "F.layer_norm(SEQ,(128,))"),
    ("batch_norm", "F.batch_norm(IMG,None,None,training=True)"),
    ("group_norm", "F.group_norm(IMG,4)"),
    ("instance_norm", "F.instance_norm(IMG)"),
    ("rms_norm", "F.rms_norm(SEQ,(128,))"),
    ("normalize", "F.normalize(MM,dim=1)"),
    ("embedding", "F.embedding(TOK,EMB)"),
    ("cross_entropy", "F.cross_entropy(LOG,LAB)"),
    ("nll", "F.nll_loss(LOG,LAB)"),
    ("mse", "F.mse_loss(MM,MM2)"),
    ("bce_logits", "F.binary_cross_entropy_with_logits(MM,T.sigmoid(MM2))"),
    ("smooth_l1", "F.smooth_l1_loss(MM,MM2)"),
    ("kl_div", "F.kl_div(F.log_softmax(LOG,1),F.softmax(LOG,1),reduction='batchmean')"),
    ("dropout", "F.dropout(A,0.5,True)"),
    ("interp_nearest", "F.interpolate(IMG,scale_factor=2)"),
    ("interp_bilinear", "F.interpolate(IMG,scale_factor=2,mode='bilinear')"),
    ("interp_bicubic", "F.interpolate(IMG[:8],scale_factor=2,mode='bicubic')"),
    ("pixel_shuffle", "F.pixel_shuffle(IMG,2)"),
    ("one_hot", "F.one_hot(LAB,100)"),
    ("cosine_sim", "F.cosine_similarity(MM,MM2)"),
    ("cdist", "T.cdist(MM[:256],MM2[:256])"),
    ("pdist_pair", "F.pairwise_distance(MM,MM2)"),
    ("grid_sample", "F.grid_sample(IMG,T.zeros(32,32,32,2),align_corners=False)"),
    ("linear", "F.linear(SEQ,MM[:128,:128])"),
    ("mm64", "M64@M64"),
    ("bmm", "T.bmm(SEQ,SEQ.transpose(1,2))"),
    ("sdpa_causal", "F.scaled_dot_product_attention(HEADS,HEADS,HEADS,is_causal=True)"),
    ("mv", "MM@ROW"),
    ("einsum", "T.einsum('bij,bkj->bik',SEQ,SEQ)"),
    ("outer", "T.outer(ROW,ROW)"),
    ("inv", "T.linalg.inv(SPD)"),
    ("solve", "T.linalg.solve(SPD,M64)"),
    ("cholesky", "T.linalg.cholesky(SPD)"),
    ("qr", "T.linalg.qr(M64)"),
    ("svd", "T.linalg.svd(M64)"),
    ("det", "T.linalg.det(SPD)"),
    ("eigh", "T.linalg.eigh(SPD)"),
    ("lstsq", "T.linalg.lstsq(M64,M64)"),
    ("fft", "T.fft.fft(A)"),
    ("rfft2", "T.fft.rfft2(MM)"),
    ("randn", "T.randn(N)"),
    ("rand", "T.rand(N)"),
    ("randint", "T.randint(0,100,(N,))"),
    ("randperm", "T.randperm(100000)"),
    ("multinomial", "T.multinomial(P[:1000],1000,True)"),
    ("arange", "T.arange(N)"),
    ("linspace", "T.linspace(0,1,N)"),
    ("zeros", "T.zeros(N)"),
    ("full", "T.full((N,),2.0)"),
    ("eye", "T.eye(1024)"),
    ("s_add", "S+S2"),
    ("s_mul_scalar", "S*2.0"),
    ("s_exp", "S.exp()"),
    ("s_sum", "S.sum()"),
    ("s_index", "S[3]"),
    ("s_slice", "S[2:10]"),
    ("s_view", "S.view(8,8)"),
    ("s_item", "S.sum().item()"),
    ("s_matmul", "S.view(8,8)@S.view(8,8)"),
    ("s_cat", "T.cat([S,S2])"),
    ("s_tensor", "T.tensor([1.0,2.0,3.0])"),
    ("s_relu", "T.relu(S)"),
    ("s_softmax", "T.softmax(S,0)"),
    ("s_where", "T.where(S>0,S,S2)"),
    ("s_clone", "S.clone()"),
    ("s_unsqueeze", "S.unsqueeze(0)"),
    ("s_reshape", "S.reshape(4,16)"),
    ("s_setitem", "S.__setitem__(3,1.0)"),
    ("s_linear", "F.linear(S.view(1,64),M64)"),
]

WORKER = (
    r"""
import json, sys
import numpy as np
lib, names, reps = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
T = __import__(lib)
F = T.nn.functional
T.set_grad_enabled(False)
rng = np.random.default_rng(0)
ns = {"T": T, "F": F, "np": np, "rng": rng}
exec(SETUP, ns)
ops = {}
for name, stmt in names:
    try:
        fn = eval("lambda: " + stmt, ns)
        fn()
        ops[name] = fn
    except Exception as e:  # an op this library lacks: its error is reported
        print(json.dumps({"error": name, "what": repr(e)[:70]}), file=sys.stderr)
""".replace("SETUP", repr(SETUP))
    + WORKER_TIMING
)


def _cell(v):
    return f"{v * 1e6:>12.1f}" if v is not None else f"{'-':>12}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated op names")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=30, help="calls per op per round (best kept)")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    ops = [o for o in OPS if only is None or o[0] in only]
    libs = libraries("rumus")
    times = run_workers(WORKER, libs, [json.dumps(ops), args.reps], args.rounds)
    med = {lib: {k: statistics.median(v) for k, v in times[lib].items()} for lib in libs}
    rows = []
    for name, _ in ops:
        r, t = med["rumus"].get(name), med.get("torch", {}).get(name)
        ratio = r / t if r is not None and t is not None else float("nan")
        rows.append((ratio, name, r, t))
    rows.sort(key=lambda x: -x[0] if x[0] == x[0] else float("inf"))
    print(f"{'op':<18}{'rumus us':>12}{'torch us':>12}{'rumus/torch':>13}")
    for ratio, name, r, t in rows:
        print(f"{name:<18}{_cell(r)}{_cell(t)}{ratio:>13.2f}")


if __name__ == "__main__":
    sys.exit(main())
