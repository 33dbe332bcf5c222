// im2col / col2im (rust/backend/cpu/conv.rs): the data movement that turns a
// convolution into one GEMM per group. Input (N, C, D, H, W) contiguous;
// columns (C·kd·kh·kw, N·OD·OH·OW) contiguous:
//   col[((c·kd + a)·kh + i)·kw + j, ((n·OD + z)·OH + y)·OW + x]
//     = input[n, c, z·sd - pd + a·dd, y·sh - ph + i·dh, x·sw - pw + j·dw]
// and 0 in the padding. 2-D convolutions are D = 1 (kd = 1, sd = dd = 1,
// pd = 0), 1-D ones also H = 1.
alias T = f32;

// Params (all entries): the CPU's Geom, then element offsets where the
// image (x_off) and the columns (col_off) start. pd/ph/pw are the padding
// before the first element; the padding after is implied by od/oh/ow.
struct Params {
    n: u32, c: u32, d: u32, h: u32,
    w: u32, kd: u32, kh: u32, kw: u32,
    sd: u32, sh: u32, sw: u32, pd: u32,
    ph: u32, pw: u32, dd: u32, dh: u32,
    dw: u32, od: u32, oh: u32, ow: u32,
    x_off: u32, col_off: u32,
}

const WG: u32 = 256u;
const RPT: u32 = 8u; // column rows per im2col thread: (c, a, i, j) stepped, not divided

@group(0) @binding(2) var<storage, read> p: Params;

// The column of invocation `lane` in workgroup wid: x and z count tiles of 256 columns.
fn column(wid: vec3<u32>, nwg: vec3<u32>, lane: u32) -> u32 {
    return (wid.x + wid.z * nwg.x) * WG + lane;
}

// Per-column part of the source position: image offset of (n, channel 0) and
// the window's corner (may be negative in the padding).
struct Corner {
    base: u32,
    z0: i32,
    y0: i32,
    x0: i32,
}

fn corner(col: u32) -> Corner {
    let l2 = p.oh * p.ow;
    let l = p.od * l2;
    let n = col / l;
    var rem = col - n * l;
    let z = rem / l2;
    rem -= z * l2;
    let y = rem / p.ow;
    let x = rem - y * p.ow;
    return Corner(p.x_off + n * p.c * p.d * p.h * p.w, i32(z * p.sd) - i32(p.pd),
                  i32(y * p.sh) - i32(p.ph), i32(x * p.sw) - i32(p.pw));
}

// Image element index of tap (c, a, i, j) of a column, or -1 in the padding.
fn source(k: Corner, c: u32, a: u32, i: u32, j: u32) -> i32 {
    let iz = k.z0 + i32(a * p.dd);
    let iy = k.y0 + i32(i * p.dh);
    let ix = k.x0 + i32(j * p.dw);
    if (iz < 0 || iz >= i32(p.d) || iy < 0 || iy >= i32(p.h) || ix < 0 || ix >= i32(p.w)) {
        return -1;
    }
    return i32(k.base + ((c * p.d + u32(iz)) * p.h + u32(iy)) * p.w + u32(ix));
}

// The tap (c, a, i, j) of column row r.
struct Tap {
    c: u32,
    a: u32,
    i: u32,
    j: u32,
}

fn tap(r: u32) -> Tap {
    let khw = p.kh * p.kw;
    let kk = p.kd * khw;
    let c = r / kk;
    let a = (r - c * kk) / khw;
    let t = r - c * kk - a * khw;
    let i = t / p.kw;
    return Tap(c, a, i, t - i * p.kw);
}

// The next row's tap: (c, a, i, j) stepped with carries.
fn next(t: Tap) -> Tap {
    var s = t;
    s.j++;
    if (s.j == p.kw) { s.j = 0u; s.i++; }
    if (s.i == p.kh) { s.i = 0u; s.a++; }
    if (s.a == p.kd) { s.a = 0u; s.c++; }
    return s;
}

// ---- im2col (float) ----
// Bindings: 0 x (T, read), 1 col (T, read_write), 2 params.
@group(0) @binding(0) var<storage, read> fx: array<T>;
@group(0) @binding(1) var<storage, read_write> fcol: array<T>;

// col = im2col(x). A thread per column and 8 consecutive rows (adjacent
// threads write adjacent columns).
// Grid: tiles = ceil(N·OD·OH·OW / 256):
// (min(tiles, 65535), ceil(C·kd·kh·kw / 8), ceil(tiles / 65535)).
@compute @workgroup_size(256)
fn im2col(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lane: u32) {
    let cols = p.n * p.od * p.oh * p.ow;
    let col = column(wid, nwg, lane);
    let rows = p.c * p.kd * p.kh * p.kw;
    let r0 = wid.y * RPT;
    if (col >= cols || r0 >= rows) { return; }
    let k = corner(col);
    var t = tap(r0);
    for (var r = r0; r < min(r0 + RPT, rows); r++) {
        let s = source(k, t.c, t.a, t.i, t.j);
        var v = T(0.0);
        if (s >= 0) { v = fx[s]; }
        fcol[p.col_off + r * cols + col] = v;
        t = next(t);
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
    let cols = p.n * p.od * p.oh * p.ow;
    let col = column(wid, nwg, lane);
    let rows = p.c * p.kd * p.kh * p.kw;
    let r0 = wid.y * RPT;
    if (col >= cols || r0 >= rows) { return; }
    let k = corner(col);
    var t = tap(r0);
    for (var r = r0; r < min(r0 + RPT, rows); r++) {
        let s = source(k, t.c, t.a, t.i, t.j);
        var v = 0u;
        if (s >= 0) { v = ux[s]; }
        ucol[p.col_off + r * cols + col] = v;
        t = next(t);
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
// in the CPU's order (taps a, i, j ascending); x is overwritten, not accumulated.
// Grid: 1-D over N·C·D·H·W: groups_1d(N·C·D·H·W).
@compute @workgroup_size(256)
fn col2im(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = gid.x + gid.y * nwg.x * WG;
    let total = p.n * p.c * p.d * p.h * p.w;
    if (id >= total) { return; }
    let t = id / p.w;
    let ix = id - t * p.w;
    let u = t / p.h;
    let iy = t - u * p.h;
    let plane = u / p.d;
    let iz = u - plane * p.d;
    let n = plane / p.c;
    let c = plane - n * p.c;
    let cols = p.n * p.od * p.oh * p.ow;
    let colbase = p.col_off + n * p.od * p.oh * p.ow;
    var s = 0.0;
    for (var a = 0u; a < p.kd; a++) {
        let tz = i32(iz + p.pd) - i32(a * p.dd);
        if (tz < 0) { break; } // later taps are further back
        let oz = out_pos(tz, p.sd, p.od);
        if (oz < 0) { continue; }
        for (var i = 0u; i < p.kh; i++) {
            let ty = i32(iy + p.ph) - i32(i * p.dh);
            if (ty < 0) { break; } // later taps are further up
            let oy = out_pos(ty, p.sh, p.oh);
            if (oy < 0) { continue; }
            let rowbase = ((c * p.kd + a) * p.kh + i) * p.kw;
            let outbase = colbase + (u32(oz) * p.oh + u32(oy)) * p.ow;
            for (var j = 0u; j < p.kw; j++) {
                let tx = i32(ix + p.pw) - i32(j * p.dw);
                if (tx < 0) { break; }
                let ox = out_pos(tx, p.sw, p.ow);
                if (ox < 0) { continue; }
                s += f32(gcol[(rowbase + j) * cols + outbase + u32(ox)]);
            }
        }
    }
    gx[p.x_off + id] = T(s);
}
