// im2col / col2im (rust/backend/cpu/conv.rs): the data movement that turns a
// convolution into one GEMM per group. Input (N, C, H, W) contiguous; columns
// (C·kh·kw, N·OH·OW) contiguous:
//   col[(c·kh + i)·kw + j, (n·OH + y)·OW + x] = input[n, c, y·sh - ph + i·dh, x·sw - pw + j·dw]
// and 0 in the padding. 1-D convolutions are H = 1 (kh = 1, sh = dh = 1, ph = 0).
alias T = f32;

// Params (all entries): the CPU's Geom, then element offsets where the
// image (x_off) and the columns (col_off) start. ph/pw are the padding
// before the first element; the padding after is implied by oh/ow.
struct Params {
    n: u32, c: u32, h: u32, w: u32,
    kh: u32, kw: u32, sh: u32, sw: u32,
    ph: u32, pw: u32, dh: u32, dw: u32,
    oh: u32, ow: u32, x_off: u32, col_off: u32,
}

const WG: u32 = 256u;
const RPT: u32 = 8u; // column rows per im2col thread: (c, i, j) stepped, not divided

@group(0) @binding(2) var<storage, read> p: Params;

// The column of invocation `lane` in workgroup wid: x and z count tiles of 256 columns.
fn column(wid: vec3<u32>, nwg: vec3<u32>, lane: u32) -> u32 {
    return (wid.x + wid.z * nwg.x) * WG + lane;
}

// Per-column part of the source position: image offset of (n, channel 0) and
// the window's top-left corner (may be negative in the padding).
struct Corner {
    base: u32,
    y0: i32,
    x0: i32,
}

fn corner(col: u32) -> Corner {
    let l = p.oh * p.ow;
    let n = col / l;
    let rem = col - n * l;
    let y = rem / p.ow;
    let x = rem - y * p.ow;
    return Corner(p.x_off + n * p.c * p.h * p.w, i32(y * p.sh) - i32(p.ph), i32(x * p.sw) - i32(p.pw));
}

// Image element index of tap (c, i, j) of a column, or -1 in the padding.
fn source(k: Corner, c: u32, i: u32, j: u32) -> i32 {
    let iy = k.y0 + i32(i * p.dh);
    let ix = k.x0 + i32(j * p.dw);
    if (iy < 0 || iy >= i32(p.h) || ix < 0 || ix >= i32(p.w)) {
        return -1;
    }
    return i32(k.base + (c * p.h + u32(iy)) * p.w + u32(ix));
}

// ---- im2col (float) ----
// Bindings: 0 x (T, read), 1 col (T, read_write), 2 params.
@group(0) @binding(0) var<storage, read> fx: array<T>;
@group(0) @binding(1) var<storage, read_write> fcol: array<T>;

// col = im2col(x). A thread per column and 8 consecutive rows (adjacent
// threads write adjacent columns).
// Grid: tiles = ceil(N·OH·OW / 256):
// (min(tiles, 65535), ceil(C·kh·kw / 8), ceil(tiles / 65535)).
@compute @workgroup_size(256)
fn im2col(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lane: u32) {
    let cols = p.n * p.oh * p.ow;
    let col = column(wid, nwg, lane);
    let rows = p.c * p.kh * p.kw;
    let r0 = wid.y * RPT;
    if (col >= cols || r0 >= rows) { return; }
    let k = corner(col);
    let kk = p.kh * p.kw;
    var c = r0 / kk;
    var i = (r0 - c * kk) / p.kw;
    var j = r0 - c * kk - i * p.kw;
    for (var r = r0; r < min(r0 + RPT, rows); r++) {
        let s = source(k, c, i, j);
        var v = T(0.0);
        if (s >= 0) { v = fx[s]; }
        fcol[p.col_off + r * cols + col] = v;
        j++;
        if (j == p.kw) { j = 0u; i++; }
        if (i == p.kh) { i = 0u; c++; }
    }
}

// ---- im2col_u32 (32-bit integer / bool tensors: i32, u32 words) ----
// Bindings: 0 x (u32, read), 1 col (u32, read_write), 2 params. Grid as im2col.
@group(0) @binding(0) var<storage, read> ux: array<u32>;
@group(0) @binding(1) var<storage, read_write> ucol: array<u32>;

// col = im2col(x) on 32-bit words (bit copies; 0 in the padding).
@compute @workgroup_size(256)
fn im2col_u32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lane: u32) {
    let cols = p.n * p.oh * p.ow;
    let col = column(wid, nwg, lane);
    let rows = p.c * p.kh * p.kw;
    let r0 = wid.y * RPT;
    if (col >= cols || r0 >= rows) { return; }
    let k = corner(col);
    let kk = p.kh * p.kw;
    var c = r0 / kk;
    var i = (r0 - c * kk) / p.kw;
    var j = r0 - c * kk - i * p.kw;
    for (var r = r0; r < min(r0 + RPT, rows); r++) {
        let s = source(k, c, i, j);
        var v = 0u;
        if (s >= 0) { v = ux[s]; }
        ucol[p.col_off + r * cols + col] = v;
        j++;
        if (j == p.kw) { j = 0u; i++; }
        if (i == p.kh) { i = 0u; c++; }
    }
}

// ---- col2im ----
// Bindings: 0 col (T, read), 1 x (T, read_write), 2 params.
@group(0) @binding(0) var<storage, read> gcol: array<T>;
@group(0) @binding(1) var<storage, read_write> gx: array<T>;

// The output index along one axis whose tap reads input position t + pad - tap·dil
// = o·stride, or -1 when there is none.
fn out_pos(t: i32, s: u32, n: u32) -> i32 {
    if (t < 0) { return -1; }
    var o = t;
    if (s != 1u) {
        o = t / i32(s);
        if (o * i32(s) != t) { return -1; }
    }
    return select(-1, o, o < i32(n));
}

// x = col2im(col): every column entry added back to the input position it was
// read from, as a gather (a thread per input element, no atomics). Sums in f32
// in the CPU's order (taps i, j ascending); x is overwritten, not accumulated.
// Grid: 1-D over N·C·H·W: groups_1d(N·C·H·W).
@compute @workgroup_size(256)
fn col2im(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = gid.x + gid.y * nwg.x * WG;
    let total = p.n * p.c * p.h * p.w;
    if (id >= total) { return; }
    let t = id / p.w;
    let ix = id - t * p.w;
    let plane = t / p.h;
    let iy = t - plane * p.h;
    let n = plane / p.c;
    let c = plane - n * p.c;
    let cols = p.n * p.oh * p.ow;
    let colbase = p.col_off + n * p.oh * p.ow;
    var s = 0.0;
    for (var i = 0u; i < p.kh; i++) {
        let ty = i32(iy + p.ph) - i32(i * p.dh);
        if (ty < 0) { break; } // later taps are further up
        let oy = out_pos(ty, p.sh, p.oh);
        if (oy < 0) { continue; }
        let rowbase = (c * p.kh + i) * p.kw;
        for (var j = 0u; j < p.kw; j++) {
            let tx = i32(ix + p.pw) - i32(j * p.dw);
            if (tx < 0) { break; }
            let ox = out_pos(tx, p.sw, p.ow);
            if (ox < 0) { continue; }
            s += f32(gcol[(rowbase + j) * cols + colbase + u32(oy) * p.ow + u32(ox)]);
        }
    }
    gx[p.x_off + id] = T(s);
}
