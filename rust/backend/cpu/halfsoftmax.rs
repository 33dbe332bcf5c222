//! softmax / log_softmax of float16/bfloat16 tensors, forward and backward,
//! one small block at a time: a block of rows (or of columns across the
//! softmax dim) is widened into a float32 buffer of at most CHUNK elements,
//! the float32 kernel runs on it and its result is rounded back. No float32
//! copy of the whole tensor is made.

use super::halfreduce::Half;
use super::softmax::{backward as kernel_backward, forward as kernel_forward};
use super::P;

/// Elements of one block's buffers (each 64 KB, in L2).
const CHUNK: usize = 1 << 14;

/// Visits blocks of a contiguous (outer, n, inner) tensor: `f(offset, rows,
/// w)` for `rows` consecutive outer indices (inner = 1) or for one outer
/// index and the w columns of inner from `offset % inner` on.
fn blocks(outer: usize, n: usize, inner: usize, f: impl Fn(usize, usize, usize) + Sync) {
    let work = outer * n * inner;
    if inner == 1 {
        let per = (CHUNK / n.max(1)).max(1);
        super::team::for_each_if(work, outer.div_ceil(per), |b| {
            let o = b * per;
            f(o * n, per.min(outer - o), 1)
        });
    } else {
        let w = (CHUNK / n.max(1)).clamp(1, inner);
        let per_outer = inner.div_ceil(w);
        super::team::for_each_if(work, outer * per_outer, |b| {
            let (o, c) = (b / per_outer, (b % per_outer) * w);
            f(o * n * inner + c, 1, w.min(inner - c))
        });
    }
}

/// Widens (or, with `back`, rounds) the block at `off` to/from a
/// contiguous buffer: rows x n elements, or n rows of w columns of inner.
///
/// # Safety
/// The block lies inside the tensor at `h`.
unsafe fn copy_block<H: Half>(
    h: P<H>,
    buf: &mut [f32],
    off: usize,
    rows: usize,
    n: usize,
    inner: usize,
    w: usize,
    back: bool,
) {
    let (run, count, stride) = if inner == 1 { (rows * n, 1, 0) } else { (w, n, inner) };
    for i in 0..count {
        let (b, s) = (&mut buf[i * run..(i + 1) * run], h.at((off + i * stride) as isize));
        if back {
            H::narrow_slice(b, std::slice::from_raw_parts_mut(s, run));
        } else {
            H::widen_slice(std::slice::from_raw_parts(s, run), b);
        }
    }
}

/// y = softmax(x) (log_softmax with `log`) along the middle dim.
///
/// # Safety
/// `x` and `y` hold outer × n × inner contiguous elements.
pub unsafe fn forward<H: Half>(x: P<H>, y: P<H>, outer: usize, n: usize, inner: usize, log: bool) {
    blocks(outer, n, inner, |off, rows, w| {
        let len = rows * n * w;
        let (mut bx, mut by) = (vec![0f32; len], vec![0f32; len]);
        // SAFETY: the block is inside both tensors and is this task's alone.
        unsafe {
            copy_block(x, &mut bx, off, rows, n, inner, w, false);
            kernel_forward::<f32>(P(bx.as_mut_ptr()), P(by.as_mut_ptr()), rows, n, w, log);
            copy_block(y, &mut by, off, rows, n, inner, w, true);
        }
    });
}

/// gx from the saved output y and the gradient g (as `softmax::backward`).
///
/// # Safety
/// All three hold outer × n × inner contiguous elements.
pub unsafe fn backward<H: Half>(
    y: P<H>,
    g: P<H>,
    gx: P<H>,
    outer: usize,
    n: usize,
    inner: usize,
    log: bool,
) {
    blocks(outer, n, inner, |off, rows, w| {
        let len = rows * n * w;
        let (mut by, mut bg, mut bx) = (vec![0f32; len], vec![0f32; len], vec![0f32; len]);
        // SAFETY: the block is inside the three tensors and is this task's alone.
        unsafe {
            copy_block(y, &mut by, off, rows, n, inner, w, false);
            copy_block(g, &mut bg, off, rows, n, inner, w, false);
            kernel_backward::<f32>(
                P(by.as_mut_ptr()),
                P(bg.as_mut_ptr()),
                P(bx.as_mut_ptr()),
                rows,
                n,
                w,
                log,
            );
            copy_block(gx, &mut bx, off, rows, n, inner, w, true);
        }
    });
}
