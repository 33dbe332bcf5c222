// Implicit-GEMM convolution (rust/backend/gpu/conv_igemm.rs): the three
// passes of a convolution as one GEMM per group whose operand tiles are
// gathered from the image / weight / output gradient straight into workgroup
// memory, so no im2col column buffer exists. Geometry as conv.wgsl: input
// (N, C, D, H, W), weight (OC, C/G, kd, kh, kw), output (N, OC, OD, OH, OW),
// all contiguous; im2col row r = (c, a, i, j), column = (n, z, y, x).
//   mode 0 forward:       y[n, o, l]  = Σ_r W[o, r] · cols[r, (n, l)] (+ bias[o])
//   mode 1 input grad:   dx[n, c, q]  = Σ_(o, tap) W[o, c, tap] · dy[n, o, l(q, tap)]
//   mode 2 weight grad:  dW[o, r]     = Σ_(n, l) dy[n, o, l] · cols[r, (n, l)]
// Per group (workgroup z) C_g[m, col] = Σ_k A[m, k] · B[k, col] with
//   mode 0: m = o,  col = (n, l) output pixel, k = r
//   mode 1: m = c,  col = (n, q) input pixel,  k = (o, tap)
//   mode 2: m = o,  col = r,                   k = (n, l)
// Float kernels use T and accumulate in f32 (shaders/README.md).
alias T = f32;

// Params (Rust twin: backend/gpu/conv_igemm.rs): the CPU's Geom (c is the
// input's channels), then groups, the output channels, the mode, flags
// (bit 0: add bias[o]; bit 1: add into out instead of overwriting) and the
// element offsets of the bindings in their windows.
struct Params {
    n: u32, c: u32, d: u32, h: u32,
    w: u32, kd: u32, kh: u32, kw: u32,
    sd: u32, sh: u32, sw: u32, pd: u32,
    ph: u32, pw: u32, dd: u32, dh: u32,
    dw: u32, od: u32, oh: u32, ow: u32,
    groups: u32, oc: u32, mode: u32, flags: u32,
    s0_off: u32, s1_off: u32, out_off: u32, bias_off: u32,
}

// Bindings: 0 s0 (T, read): mode 0/1 the weight, mode 2 dy; 1 s1 (T, read):
// mode 0/2 the input x, mode 1 dy; 2 out (T, read_write); 3 bias (T, read;
// a dummy without bias); 4 params.
@group(0) @binding(0) var<storage, read> s0: array<T>;
@group(0) @binding(1) var<storage, read> s1: array<T>;
@group(0) @binding(2) var<storage, read_write> out: array<T>;
@group(0) @binding(3) var<storage, read> bias: array<T>;
@group(0) @binding(4) var<storage, read> p: Params;

// Tiling: a workgroup of 256 threads computes a 64 x 64 tile of C_g, each
// thread 4 x 4 outputs in 4 vec4 registers; K advances in slices of 16. The
// next slice's gathered values wait in registers while this one is multiplied.
const TM: u32 = 64u;
const TK: u32 = 16u;
var<workgroup> Ta: array<vec4<f32>, 256>; // Ta[k * 16 + m / 4][m % 4]
var<workgroup> Tb: array<vec4<f32>, 256>; // Tb[k * 16 + col / 4][col % 4]

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

// The tap (a, i, j) of a kernel offset t < kd·kh·kw.
fn tap(t: u32) -> vec3<u32> {
    let khw = p.kh * p.kw;
    let a = t / khw;
    let r = t - a * khw;
    let i = r / p.kw;
    return vec3<u32>(a, i, r - i * p.kw);
}

// im2col(x)[r, col] of group g, 0 in the padding (r, col in range).
fn cols(g: u32, r: u32, col: u32) -> f32 {
    let kk = p.kd * p.kh * p.kw;
    let c = r / kk;
    let t = tap(r - c * kk);
    let l2 = p.oh * p.ow;
    let l = p.od * l2;
    let img = col / l;
    var rem = col - img * l;
    let z = rem / l2;
    rem -= z * l2;
    let y = rem / p.ow;
    let x = rem - y * p.ow;
    let iz = i32(z * p.sd + t.x * p.dd) - i32(p.pd);
    let iy = i32(y * p.sh + t.y * p.dh) - i32(p.ph);
    let ix = i32(x * p.sw + t.z * p.dw) - i32(p.pw);
    if (iz < 0 || iz >= i32(p.d) || iy < 0 || iy >= i32(p.h) || ix < 0 || ix >= i32(p.w)) {
        return 0.0;
    }
    let ch = img * p.c + g * (p.c / p.groups) + c;
    return f32(s1[p.s1_off + ((ch * p.d + u32(iz)) * p.h + u32(iy)) * p.w + u32(ix)]);
}

// The output index along one axis whose tap reads input position t + pad -
// tap·dil = o·stride, or -1 when there is none.
fn out_pos(t: i32, s: u32, n: u32) -> i32 {
    if (t < 0) { return -1; }
    let o = t / i32(s);
    if (o * i32(s) != t || o >= i32(n)) { return -1; }
    return o;
}

// Mode 1's B: dy[n, o, l] for k = (o, tap) and input pixel col = (n, q), 0 when
// that tap of no output pixel reads q.
fn dy_at(g: u32, k: u32, col: u32) -> f32 {
    let kk = p.kd * p.kh * p.kw;
    let o = k / kk;
    let t = tap(k - o * kk);
    let hw = p.h * p.w;
    let lin = p.d * hw;
    let img = col / lin;
    var rem = col - img * lin;
    let iz = rem / hw;
    rem -= iz * hw;
    let iy = rem / p.w;
    let ix = rem - iy * p.w;
    let oz = out_pos(i32(iz + p.pd) - i32(t.x * p.dd), p.sd, p.od);
    let oy = out_pos(i32(iy + p.ph) - i32(t.y * p.dh), p.sh, p.oh);
    let ox = out_pos(i32(ix + p.pw) - i32(t.z * p.dw), p.sw, p.ow);
    if (oz < 0 || oy < 0 || ox < 0) {
        return 0.0;
    }
    let ch = img * p.oc + g * (p.oc / p.groups) + o;
    return f32(s1[p.s1_off + ((ch * p.od + u32(oz)) * p.oh + u32(oy)) * p.ow + u32(ox)]);
}

// A[m, k] of group g, 0 outside the GEMM.
fn load_a(g: u32, m: u32, k: u32, sz: vec3<u32>) -> f32 {
    if (m >= sz.x || k >= sz.z) { return 0.0; }
    let cg = p.c / p.groups;
    let og = p.oc / p.groups;
    let kk = p.kd * p.kh * p.kw;
    if (p.mode == 0u) {
        return f32(s0[p.s0_off + (g * og + m) * cg * kk + k]);
    }
    if (p.mode == 1u) {
        let o = k / kk;
        return f32(s0[p.s0_off + ((g * og + o) * cg + m) * kk + k - o * kk]);
    }
    let l = p.od * p.oh * p.ow;
    let img = k / l;
    return f32(s0[p.s0_off + (img * p.oc + g * og + m) * l + k - img * l]);
}

// B[k, col] of group g, 0 outside the GEMM.
fn load_b(g: u32, k: u32, col: u32, sz: vec3<u32>) -> f32 {
    if (k >= sz.z || col >= sz.y) { return 0.0; }
    if (p.mode == 0u) { return cols(g, k, col); }
    if (p.mode == 1u) { return dy_at(g, k, col); }
    return cols(g, col, k);
}

// Thread t's 4 gathered A and B elements of the slice at k0. A runs along k
// across threads (weights and dy are k-contiguous); B along the image's
// pixels, which is col for modes 0 and 1 and k for mode 2.
struct Slice {
    a: vec4<f32>,
    b: vec4<f32>,
}

fn load_slice(t: u32, g: u32, row0: u32, col0: u32, k0: u32, sz: vec3<u32>) -> Slice {
    var s: Slice;
    let ka = k0 + (t & 15u);
    for (var q = 0u; q < 4u; q++) {
        s.a[q] = load_a(g, row0 + (t >> 4u) + 16u * q, ka, sz);
        if (p.mode == 2u) {
            s.b[q] = load_b(g, ka, col0 + (t >> 4u) + 16u * q, sz);
        } else {
            s.b[q] = load_b(g, k0 + (t >> 6u) + 4u * q, col0 + (t & 63u), sz);
        }
    }
    return s;
}

fn store_slice(t: u32, s: Slice) {
    for (var q = 0u; q < 4u; q++) {
        let m = (t >> 4u) + 16u * q;
        Ta[(t & 15u) * 16u + (m >> 2u)][m & 3u] = s.a[q];
        if (p.mode == 2u) {
            Tb[(t & 15u) * 16u + (m >> 2u)][m & 3u] = s.b[q];
        } else {
            let col = t & 63u;
            Tb[((t >> 6u) + 4u * q) * 16u + (col >> 2u)][col & 3u] = s.b[q];
        }
    }
}

// Writes row m (4 columns from col) of the group's result to its place.
fn store_row(g: u32, m: u32, col: u32, v: vec4<f32>, sz: vec3<u32>) {
    if (m >= sz.x) { return; }
    for (var j = 0u; j < 4u; j++) {
        let cj = col + j;
        if (cj >= sz.y) { return; }
        var o = v[j];
        var i: u32;
        if (p.mode == 0u) {
            let l = p.od * p.oh * p.ow;
            let img = cj / l;
            let ch = g * (p.oc / p.groups) + m;
            i = (img * p.oc + ch) * l + cj - img * l;
            if ((p.flags & 1u) != 0u) { o += f32(bias[p.bias_off + ch]); }
        } else if (p.mode == 1u) {
            let lin = p.d * p.h * p.w;
            let img = cj / lin;
            i = (img * p.c + g * (p.c / p.groups) + m) * lin + cj - img * lin;
        } else {
            i = (g * (p.oc / p.groups) + m) * sz.y + cj;
        }
        i += p.out_off;
        if ((p.flags & 2u) != 0u) { o += f32(out[i]); }
        out[i] = T(o);
    }
}

// Grid: (ceil(Ncols / 64), ceil(M / 64), groups).
@compute @workgroup_size(256)
fn conv_igemm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let sz = dims();
    let g = wid.z;
    let row0 = wid.y * TM;
    let col0 = wid.x * TM;
    let tx = t & 15u;
    let ty = t >> 4u;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    var s = load_slice(t, g, row0, col0, 0u, sz);
    for (var k0 = 0u; k0 < sz.z; k0 += TK) {
        store_slice(t, s);
        workgroupBarrier();
        if (k0 + TK < sz.z) {
            s = load_slice(t, g, row0, col0, k0 + TK, sz);
        }
        for (var kk = 0u; kk < TK; kk++) {
            let a = Ta[kk * 16u + ty];
            let b = Tb[kk * 16u + tx];
            acc0 = fma(vec4<f32>(a.x), b, acc0);
            acc1 = fma(vec4<f32>(a.y), b, acc1);
            acc2 = fma(vec4<f32>(a.z), b, acc2);
            acc3 = fma(vec4<f32>(a.w), b, acc3);
        }
        workgroupBarrier();
    }
    let m = row0 + ty * 4u;
    let col = col0 + tx * 4u;
    store_row(g, m, col, acc0, sz);
    store_row(g, m + 1u, col, acc1, sz);
    store_row(g, m + 2u, col, acc2, sz);
    store_row(g, m + 3u, col, acc3, sz);
}
