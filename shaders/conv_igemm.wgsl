// Implicit-GEMM convolution (rust/backend/gpu/conv_igemm.rs): the three
// passes of a convolution as one GEMM per group whose operand tiles are
// gathered from the image / weight / output gradient straight into workgroup
// memory, so no im2col column buffer exists. Geometry as conv.wgsl: input
// (N, C, D, H, W), weight (OC, C/G, kd, kh, kw), output (N, OC, OD, OH, OW),
// all contiguous; a kernel tap t = (a, i, j) < kd·kh·kw.
//   mode 0 forward:       y[n, o, l]  = Σ_(c, t) W[o, c, t] · x[n, c, l ⊕ t] (+ bias[o])
//   mode 1 input grad:   dx[n, c, q]  = Σ_(o, t) W[o, c, t] · dy[n, o, l(q, t)]
//   mode 2 weight grad:  dW[o, c, t]  = Σ_(n, l) dy[n, o, l] · x[n, c, l ⊕ t]
// Per group C_g[m, col] = Σ_k A[m, k] · B[k, col] with
//   mode 0: m = o,  col = (n, l) output pixel, k = (t, c)
//   mode 1: m = c,  col = (n, q) input pixel,  k = (t, o)
//   mode 2: m = o,  col = (c, t),              k = (n, l)
// (k's first component outermost). Tap-major k keeps a thread's tap, and so
// its gather offset, fixed over many K steps. Split-K: workgroup z = (group,
// slice); with `splits` > 1 each slice of `kslice` k writes its f32 partial C
// into `part` in the output's layout and conv_igemm_reduce sums them.
// Float kernels use T and accumulate in f32 (shaders/README.md).
alias T = f32;

// Params (Rust twin: backend/gpu/conv_igemm.rs): the CPU's Geom (c is the
// input's channels), then groups, the output channels, the mode, flags
// (bit 0: add bias[o]; bit 1: add into out instead of overwriting), the
// element offsets of the bindings in their windows, the K slices and their
// length, and the output's elements (one partial's length).
struct Params {
    n: u32, c: u32, d: u32, h: u32,
    w: u32, kd: u32, kh: u32, kw: u32,
    sd: u32, sh: u32, sw: u32, pd: u32,
    ph: u32, pw: u32, dd: u32, dh: u32,
    dw: u32, od: u32, oh: u32, ow: u32,
    groups: u32, oc: u32, mode: u32, flags: u32,
    s0_off: u32, s1_off: u32, out_off: u32, bias_off: u32,
    splits: u32, kslice: u32, part_len: u32, pad0: u32,
}

// Bindings: 0 s0 (T, read): mode 0/1 the weight, mode 2 dy; 1 s1 (T, read):
// mode 0/2 the input x, mode 1 dy; 2 out (T, read_write); 3 bias (T, read;
// a dummy without bias); 4 part (f32 partials [splits, part_len]; a dummy
// without split-K); 5 params.
@group(0) @binding(0) var<storage, read> s0: array<T>;
@group(0) @binding(1) var<storage, read> s1: array<T>;
@group(0) @binding(2) var<storage, read_write> out: array<T>;
@group(0) @binding(3) var<storage, read> bias: array<T>;
@group(0) @binding(4) var<storage, read_write> part: array<f32>;
@group(0) @binding(5) var<storage, read> p: Params;

// Tiling: a workgroup of 256 threads computes a 64 x 64 tile of C_g, each
// thread 4 x 4 outputs in 4 vec4 registers; K advances in steps of 16. The
// next step's gathered values wait in registers while this one is multiplied.
const TM: u32 = 64u;
const TK: u32 = 16u;
// Rows of SR = 17 vec4: a thread stores down a column of Ta (and of Tb in mode
// 2), which a row of 16 would put in one memory bank.
const SR: u32 = 17u;
var<workgroup> Ta: array<vec4<f32>, 272>; // Ta[k * SR + m / 4][m % 4]
var<workgroup> Tb: array<vec4<f32>, 272>; // Tb[k * SR + col / 4][col % 4]

// A thread's gather state, advanced by TK per step so that the K loop does
// almost no integer division. A walk is a reduction index k as (hi, lo) with
// k = hi · n + lo (n = walk_n()). `wa`: A's k = k0 + t % 16 (also B's in mode
// 2). Modes 0, 1: `wbh`, `wbl` walk B's four k = k0 + t / 64 + 4q, `sp` the
// spatial offset each one's tap reads for the thread's column (-1: padding, or
// no output pixel), `cbase` the column's image / group channel base, `cpos`
// its (z, y, x) with stride and padding folded in. Mode 2 (registers shared):
// the thread's four columns (c, t) as channel offsets in `wbl` and tap
// displacements in `sp`, `ry`, `rx`. A column past the GEMM's gets position
// OUT, which every bounds check rejects.
const OUT: i32 = -1073741824;
var<private> wa: vec2<u32>;
var<private> wbh: vec4<u32>;
var<private> wbl: vec4<u32>;
var<private> sp: vec4<i32>;
var<private> ry: vec4<i32>;
var<private> rx: vec4<i32>;
var<private> cbase: u32;
var<private> cpos: vec3<i32>;

// Sizes of the group GEMM: (M, Ncols, K).
fn dims() -> vec3<u32> {
    let cg = p.c / p.groups;
    let og = p.oc / p.groups;
    let kk = p.kd * p.kh * p.kw;
    let l = p.od * p.oh * p.ow;
    if (p.mode == 0u) {
        return vec3<u32>(og, p.n * l, cg * kk);
    }
    if (p.mode == 1u) {
        return vec3<u32>(cg, p.n * p.d * p.h * p.w, og * kk);
    }
    return vec3<u32>(og, cg * kk, p.n * l);
}

// The inner extent of a walk: channels per group (modes 0, 1), output pixels
// per image (mode 2).
fn walk_n() -> u32 {
    if (p.mode == 0u) { return p.c / p.groups; }
    if (p.mode == 1u) { return p.oc / p.groups; }
    return p.od * p.oh * p.ow;
}

fn walk(k: u32, n: u32) -> vec2<u32> {
    let hi = k / n;
    return vec2<u32>(hi, k - hi * n);
}

// The walk TK further on: divides only when lo wraps.
fn step(w: vec2<u32>, n: u32) -> vec2<u32> {
    var hi = w.x;
    var lo = w.y + TK;
    if (lo >= n) {
        let q = lo / n;
        hi += q;
        lo -= q * n;
    }
    return vec2<u32>(hi, lo);
}

// The tap (a, i, j) of a kernel offset t < kd·kh·kw.
fn tap(t: u32) -> vec3<u32> {
    let khw = p.kh * p.kw;
    let a = t / khw;
    let r = t - a * khw;
    let i = r / p.kw;
    return vec3<u32>(a, i, r - i * p.kw);
}

// The output index along one axis whose tap reads input position t + pad -
// tap·dil = o·stride, or -1 when there is none.
fn out_pos(t: i32, s: u32, n: u32) -> i32 {
    if (t < 0) { return -1; }
    var o = t;
    if (s != 1u) {
        o = t / i32(s);
        if (o * i32(s) != t) { return -1; }
    }
    if (o >= i32(n)) { return -1; }
    return o;
}

// Modes 0, 1: the spatial offset tap tp reads for the thread's column (an
// input pixel of x in mode 0, an output pixel of dy in mode 1), or -1.
fn spatial(tp: u32) -> i32 {
    let d = tap(tp);
    if (p.mode == 0u) {
        let iz = cpos.x + i32(d.x * p.dd);
        let iy = cpos.y + i32(d.y * p.dh);
        let ix = cpos.z + i32(d.z * p.dw);
        if (iz < 0 || iz >= i32(p.d) || iy < 0 || iy >= i32(p.h) || ix < 0 || ix >= i32(p.w)) {
            return -1;
        }
        return (iz * i32(p.h) + iy) * i32(p.w) + ix;
    }
    let oz = out_pos(cpos.x - i32(d.x * p.dd), p.sd, p.od);
    let oy = out_pos(cpos.y - i32(d.y * p.dh), p.sh, p.oh);
    let ox = out_pos(cpos.z - i32(d.z * p.dw), p.sw, p.ow);
    if (oz < 0 || oy < 0 || ox < 0) {
        return -1;
    }
    return (oz * i32(p.oh) + oy) * i32(p.ow) + ox;
}

// Sets up the gather state of thread t for the K slice starting at kbeg.
fn init(t: u32, g: u32, col0: u32, kbeg: u32, sz: vec3<u32>) {
    let n = walk_n();
    let kk = p.kd * p.kh * p.kw;
    let lin = p.d * p.h * p.w;
    let l2 = p.oh * p.ow;
    let l = p.od * l2;
    wa = walk(kbeg + (t & 15u), n);
    if (p.mode == 2u) {
        for (var q = 0u; q < 4u; q++) {
            let r = col0 + (t >> 4u) + 16u * q;
            let c = r / kk;
            let d = tap(r - c * kk);
            wbl[q] = c * lin;
            sp[q] = select(OUT, i32(d.x * p.dd) - i32(p.pd), r < sz.y);
            ry[q] = i32(d.y * p.dh) - i32(p.ph);
            rx[q] = i32(d.z * p.dw) - i32(p.pw);
        }
        return;
    }
    let col = col0 + (t & 63u);
    if (p.mode == 0u) {
        let img = col / l;
        var rem = col - img * l;
        let z = rem / l2;
        rem -= z * l2;
        let y = rem / p.ow;
        let x = rem - y * p.ow;
        cbase = (img * p.c + g * (p.c / p.groups)) * lin;
        cpos = vec3<i32>(
            i32(z * p.sd) - i32(p.pd),
            i32(y * p.sh) - i32(p.ph),
            i32(x * p.sw) - i32(p.pw),
        );
    } else {
        let hw = p.h * p.w;
        let img = col / lin;
        var rem = col - img * lin;
        let z = rem / hw;
        rem -= z * hw;
        let y = rem / p.w;
        let x = rem - y * p.w;
        cbase = (img * p.oc + g * (p.oc / p.groups)) * l;
        cpos = vec3<i32>(i32(z + p.pd), i32(y + p.ph), i32(x + p.pw));
    }
    if (col >= sz.y) {
        cpos = vec3<i32>(OUT);
    }
    for (var q = 0u; q < 4u; q++) {
        let w = walk(kbeg + (t >> 6u) + 4u * q, n);
        wbh[q] = w.x;
        wbl[q] = w.y;
        sp[q] = spatial(w.x);
    }
}

// Thread t's 4 gathered A and B elements of the step at k0 (k < kend), then
// the state moves to k0 + TK. A runs along k across threads (weights and dy
// are k-contiguous); B along the image's pixels, which is col for modes 0
// and 1 and k for mode 2.
struct Slice {
    a: vec4<f32>,
    b: vec4<f32>,
}

fn load_slice(t: u32, g: u32, row0: u32, k0: u32, kend: u32, sz: vec3<u32>) -> Slice {
    var s = Slice(vec4<f32>(0.0), vec4<f32>(0.0));
    let n = walk_n();
    let cg = p.c / p.groups;
    let og = p.oc / p.groups;
    let kk = p.kd * p.kh * p.kw;
    let lin = p.d * p.h * p.w;
    let aok = k0 + (t & 15u) < kend;
    if (p.mode == 2u) {
        // A = dy[img, g·og + m, l], B = x[img, g·cg + c, (z, y, x) ⊕ tap].
        let l2 = p.oh * p.ow;
        let z = wa.y / l2;
        let rem = wa.y - z * l2;
        let y = rem / p.ow;
        let bz = i32(z * p.sd);
        let by = i32(y * p.sh);
        let bx = i32((rem - y * p.ow) * p.sw);
        let abase = p.s0_off + (wa.x * p.oc + g * og) * n + wa.y;
        let bbase = p.s1_off + (wa.x * p.c + g * cg) * lin;
        for (var q = 0u; q < 4u; q++) {
            let m = row0 + (t >> 4u) + 16u * q;
            if (aok && m < sz.x) {
                s.a[q] = f32(s0[abase + m * n]);
            }
            let iz = bz + sp[q];
            let iy = by + ry[q];
            let ix = bx + rx[q];
            let inside = iz >= 0 && iz < i32(p.d) && iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w);
            if (aok && inside) {
                s.b[q] = f32(s1[bbase + wbl[q] + u32((iz * i32(p.h) + iy) * i32(p.w) + ix)]);
            }
        }
        wa = step(wa, n);
        return s;
    }
    for (var q = 0u; q < 4u; q++) {
        let m = row0 + (t >> 4u) + 16u * q;
        if (aok && m < sz.x) {
            var i: u32;
            if (p.mode == 0u) {
                i = ((g * og + m) * cg + wa.y) * kk + wa.x;
            } else {
                i = ((g * og + wa.y) * cg + m) * kk + wa.x;
            }
            s.a[q] = f32(s0[p.s0_off + i]);
        }
    }
    wa = step(wa, n);
    // The channel stride of B's tensor: x's in mode 0, dy's in mode 1.
    let chs = select(p.od * p.oh * p.ow, lin, p.mode == 0u);
    for (var q = 0u; q < 4u; q++) {
        let k = k0 + (t >> 6u) + 4u * q;
        if (k < kend && sp[q] >= 0) {
            s.b[q] = f32(s1[p.s1_off + cbase + wbl[q] * chs + u32(sp[q])]);
        }
        let w = step(vec2<u32>(wbh[q], wbl[q]), n);
        if (w.x != wbh[q]) {
            sp[q] = spatial(w.x);
        }
        wbh[q] = w.x;
        wbl[q] = w.y;
    }
    return s;
}

fn store_slice(t: u32, s: Slice) {
    for (var q = 0u; q < 4u; q++) {
        let m = (t >> 4u) + 16u * q;
        Ta[(t & 15u) * SR + (m >> 2u)][m & 3u] = s.a[q];
        if (p.mode == 2u) {
            Tb[(t & 15u) * SR + (m >> 2u)][m & 3u] = s.b[q];
        } else {
            let col = t & 63u;
            Tb[((t >> 6u) + 4u * q) * SR + (col >> 2u)][col & 3u] = s.b[q];
        }
    }
}

// Writes row m (4 columns from col) of the group's result to its place in
// the output, or of K slice `sl` to its partial.
fn store_row(g: u32, sl: u32, m: u32, col: u32, v: vec4<f32>, sz: vec3<u32>) {
    if (m >= sz.x) { return; }
    for (var j = 0u; j < 4u; j++) {
        let cj = col + j;
        if (cj >= sz.y) { return; }
        var i: u32;
        if (p.mode == 0u) {
            let l = p.od * p.oh * p.ow;
            let img = cj / l;
            i = (img * p.oc + g * (p.oc / p.groups) + m) * l + cj - img * l;
        } else if (p.mode == 1u) {
            let lin = p.d * p.h * p.w;
            let img = cj / lin;
            i = (img * p.c + g * (p.c / p.groups) + m) * lin + cj - img * lin;
        } else {
            i = (g * (p.oc / p.groups) + m) * sz.y + cj;
        }
        if (p.splits > 1u) {
            part[sl * p.part_len + i] = v[j];
            continue;
        }
        var o = v[j];
        if ((p.flags & 1u) != 0u) { o += f32(bias[p.bias_off + g * (p.oc / p.groups) + m]); }
        i += p.out_off;
        if ((p.flags & 2u) != 0u) { o += f32(out[i]); }
        out[i] = T(o);
    }
}

// Grid: (ceil(Ncols / 64), ceil(M / 64), groups · splits).
@compute @workgroup_size(256)
fn conv_igemm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let sz = dims();
    let g = wid.z / p.splits;
    let sl = wid.z - g * p.splits;
    let row0 = wid.y * TM;
    let col0 = wid.x * TM;
    let kbeg = sl * p.kslice;
    let kend = min(kbeg + p.kslice, sz.z);
    let tx = t & 15u;
    let ty = t >> 4u;
    init(t, g, col0, kbeg, sz);
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    var s = load_slice(t, g, row0, kbeg, kend, sz);
    for (var k0 = kbeg; k0 < kend; k0 += TK) {
        store_slice(t, s);
        workgroupBarrier();
        if (k0 + TK < kend) {
            s = load_slice(t, g, row0, k0 + TK, kend, sz);
        }
        for (var kk = 0u; kk < TK; kk++) {
            let a = Ta[kk * SR + ty];
            let b = Tb[kk * SR + tx];
            acc0 = fma(vec4<f32>(a.x), b, acc0);
            acc1 = fma(vec4<f32>(a.y), b, acc1);
            acc2 = fma(vec4<f32>(a.z), b, acc2);
            acc3 = fma(vec4<f32>(a.w), b, acc3);
        }
        workgroupBarrier();
    }
    let m = row0 + ty * 4u;
    let col = col0 + tx * 4u;
    store_row(g, sl, m, col, acc0, sz);
    store_row(g, sl, m + 1u, col, acc1, sz);
    store_row(g, sl, m + 2u, col, acc2, sz);
    store_row(g, sl, m + 3u, col, acc3, sz);
}

// out[i] = Σ_s part[s, i] (+ bias of i's channel in mode 0, + out[i] when
// accumulating) for i < part_len. Grid: 256 · x · y ≥ part_len.
@compute @workgroup_size(256)
fn conv_igemm_reduce(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nw: vec3<u32>,
) {
    let i = gid.x + gid.y * nw.x * 256u;
    if (i >= p.part_len) { return; }
    var acc = 0.0;
    for (var s = 0u; s < p.splits; s++) {
        acc += part[s * p.part_len + i];
    }
    if ((p.flags & 1u) != 0u) {
        acc += f32(bias[p.bias_off + (i / (p.od * p.oh * p.ow)) % p.oc]);
    }
    let o = p.out_off + i;
    if ((p.flags & 2u) != 0u) { acc += f32(out[o]); }
    out[o] = T(acc);
}
