//! Convolutions on the CPU that the direct kernels (conv_direct.rs) do not
//! take: strides, small planes, few input channels, 1×1 and 3-D kernels. The
//! im2col columns of a few images at a time go to a per-thread scratch that
//! stays in cache (about half a MiB), and each chunk is one GEMM whose result
//! is copied into the (N, O, L) output. The whole-batch route instead wrote
//! columns of kh·kw times the input through memory, kept them for the
//! backward, and transposed the (O, N·L) product into (N, O, L).

use super::conv::{col2im, im2col, Geom};
use super::conv_direct::{mat, per_thread, with_scratch};
use super::gemm::{matmul, GemmElem};
use super::P;

/// Scratch elements a chunk's columns aim for: 128 Ki (512 KiB of float32)
/// fits the L2 of current cores beside the GEMM's packed panels.
const CHUNK_ELEMS: usize = 1 << 17;

/// Whether these kernels run the convolution: one group, a nonempty output,
/// and at least one image per thread (a smaller batch leaves threads idle
/// here, where the whole-batch GEMM splits its columns over all of them).
pub fn applies(g: &Geom, groups: usize) -> bool {
    groups == 1 && out_len(g) > 0 && g.rows() > 0 && g.n >= super::threads()
}

/// Output positions per image (OD·OH·OW).
fn out_len(g: &Geom) -> usize {
    g.od * g.oh * g.ow
}

/// Images per chunk: columns of about CHUNK_ELEMS, and at least one chunk per thread.
fn chunk(g: &Geom) -> usize {
    let per_thread = g.n.div_ceil(super::threads()).max(1);
    (CHUNK_ELEMS / (g.rows() * out_len(g))).clamp(1, per_thread)
}

/// Runs `f(first image, images)` for every chunk of images, spread over the
/// team (chunks are claimed as threads free up, so an uneven split or a
/// slower core does not hold the others back).
fn per_chunk(g: &Geom, f: impl Fn(usize, usize) + Sync) {
    let b = chunk(g);
    super::team::for_each(g.n.div_ceil(b), |i| f(i * b, b.min(g.n - i * b)));
}

/// Copies images n0.. (nb of them) of t (N, O, L) into the (O, nb·L) matrix `dst`.
///
/// # Safety
/// t holds the whole batch.
unsafe fn gather<T: Copy>(t: P<T>, oc: usize, l: usize, n0: usize, nb: usize, dst: &mut [T]) {
    for i in 0..nb {
        for o in 0..oc {
            // SAFETY: plane (n0 + i, o) of t.
            let src =
                unsafe { std::slice::from_raw_parts(t.at((((n0 + i) * oc + o) * l) as isize), l) };
            dst[o * nb * l + i * l..][..l].copy_from_slice(src);
        }
    }
}

/// y (N, O, L) = conv(x (N, C, D, H, W), w (O, C·kd·kh·kw)) + bias.
///
/// # Safety
/// Contiguous operands of these shapes; y does not overlap the others.
pub unsafe fn forward<T: GemmElem + Default + std::ops::Add<Output = T> + Send + Sync>(
    g: &Geom,
    oc: usize,
    x: P<T>,
    w: P<T>,
    bias: Option<P<T>>,
    y: P<T>,
) {
    let (rows, l, img) = (g.rows(), out_len(g), g.c * g.d * g.h * g.w);
    let b = chunk(g);
    per_chunk(g, |n0, nb| {
        with_scratch([rows * b * l, oc * b * l, 0], |cols: &mut [T], out: &mut [T], _| {
            let (gc, cw) = (Geom { n: nb, ..g.clone() }, nb * l);
            // SAFETY: the caller's guarantees; images n0.. are this task's.
            unsafe {
                im2col(&gc, P(x.at((n0 * img) as isize)), P(cols.as_mut_ptr()));
                matmul(
                    oc,
                    cw,
                    rows,
                    mat(out.as_mut_ptr(), cw, 1),
                    mat(w.get(), rows, 1),
                    mat(cols.as_mut_ptr(), cw, 1),
                    1,
                    false,
                );
                for i in 0..nb {
                    for o in 0..oc {
                        let b = bias.map_or(T::ZERO, |b| *b.at(o as isize));
                        let at = (((n0 + i) * oc + o) * l) as isize;
                        let dst = std::slice::from_raw_parts_mut(y.at(at), l);
                        let src = &out[o * cw + i * l..][..l];
                        dst.iter_mut().zip(src).for_each(|(d, &v)| *d = v + b);
                    }
                }
            }
        });
    });
}

/// dx (N, C, D, H, W) of the convolution from dy (N, O, L) and w.
///
/// # Safety
/// As `forward`; dx does not overlap the others.
pub unsafe fn input_grad<T: GemmElem + Default + Send + Sync + std::ops::Add<Output = T>>(
    g: &Geom,
    oc: usize,
    dy: P<T>,
    w: P<T>,
    dx: P<T>,
) {
    let (rows, l, img) = (g.rows(), out_len(g), g.c * g.d * g.h * g.w);
    let b = chunk(g);
    per_chunk(g, |n0, nb| {
        with_scratch([rows * b * l, oc * b * l, 0], |cols: &mut [T], dyc: &mut [T], _| {
            let (gc, cw) = (Geom { n: nb, ..g.clone() }, nb * l);
            // SAFETY: the caller's guarantees; images n0.. of dx are this task's.
            unsafe {
                gather(dy, oc, l, n0, nb, dyc);
                // Column gradients = wᵀ (rows × O) @ dy chunk (O × nb·L).
                matmul(
                    rows,
                    cw,
                    oc,
                    mat(cols.as_mut_ptr(), cw, 1),
                    mat(w.get(), 1, rows),
                    mat(dyc.as_mut_ptr(), cw, 1),
                    1,
                    false,
                );
                let dxc = dx.at((n0 * img) as isize);
                std::slice::from_raw_parts_mut(dxc, nb * img).fill(T::ZERO);
                col2im(&gc, P(cols.as_mut_ptr()), P(dxc));
            }
        });
    });
}

/// dw (O, C·kd·kh·kw) of the convolution of x (N, C, D, H, W) from dy (N, O, L).
///
/// # Safety
/// As `forward`; dw does not overlap the others.
pub unsafe fn weight_grad<T: GemmElem + Default + std::ops::Add<Output = T> + Send + Sync>(
    g: &Geom,
    oc: usize,
    x: P<T>,
    dy: P<T>,
    dw: P<T>,
) {
    let (rows, l, img) = (g.rows(), out_len(g), g.c * g.d * g.h * g.w);
    let (b, size) = (chunk(g), oc * rows);
    // SAFETY: dw has `size` elements.
    let out = std::sync::Mutex::new(unsafe { std::slice::from_raw_parts_mut(dw.get(), size) });
    out.lock().unwrap_or_else(|e| e.into_inner()).fill(T::ZERO);
    // Each thread sums its images into its own partial, then adds it to dw.
    per_thread(g.n, |_, images| {
        let lens = [rows * b * l, oc * b * l, size];
        with_scratch(lens, |cols: &mut [T], dyc: &mut [T], part: &mut [T]| {
            part.fill(T::ZERO);
            for n0 in images.clone().step_by(b) {
                let nb = b.min(images.end - n0);
                let (gc, cw) = (Geom { n: nb, ..g.clone() }, nb * l);
                // SAFETY: the caller's guarantees; `part` is this task's own.
                unsafe {
                    im2col(&gc, P(x.at((n0 * img) as isize)), P(cols.as_mut_ptr()));
                    gather(dy, oc, l, n0, nb, dyc);
                    // dw += dy chunk (O × nb·L) @ columnsᵀ (nb·L × rows).
                    matmul(
                        oc,
                        rows,
                        cw,
                        mat(part.as_mut_ptr(), rows, 1),
                        mat(dyc.as_mut_ptr(), cw, 1),
                        mat(cols.as_mut_ptr(), 1, cw),
                        1,
                        true,
                    );
                }
            }
            let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
            out.iter_mut().zip(part.iter()).for_each(|(d, &v)| *d = *d + v);
        });
    });
}
