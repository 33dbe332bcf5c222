//! matmul with torch's rules (1-D, 2-D, batched with batch broadcasting), mm,
//! bmm, mv, dot, outer — all through the GEMM kernel. The decompositions of
//! rumus.linalg (through faer on the host) are in `decomp` and `solve`.

pub mod decomp;
pub mod eig;
pub mod solve;

use super::copy::to_dtype;
use super::shape::{reshape, squeeze_dim, unsqueeze};
use crate::autograd::{self, math, Backward, Node, SavedTensor};
use crate::backend::cpu::gemm::{matmul as gemm, parallel_for, GemmElem, Mat};
use crate::backend::cpu::P;
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::{broadcast_shapes, fmt_shape, numel, Shape};
use crate::tensor::{DType, Element, Tensor};

pub(crate) fn check_dtypes(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() != b.dtype() {
        bail!(
            Runtime,
            "{}: expected m1 and m2 to have the same dtype, but got: {} != {}",
            op,
            a.dtype().name(),
            b.dtype().name()
        );
    }
    if a.dtype() == DType::Bool {
        bail!(Runtime, "\"{}\" not implemented for 'Bool'", op);
    }
    Ok(())
}

/// Batched product of a (..., n, k) and b (..., k, p) whose batch dims broadcast.
/// Matrix products of tensors with >= 2 dims (batch dims broadcast); the one
/// recorded op behind matmul/mm/bmm/mv/dot (the 1-D cases are views around it).
fn batched(op: &'static str, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.dtype().is_complex() {
        return crate::ops::complex::matmul(a, b);
    }
    autograd::record(
        &[a, b],
        || batched_raw(op, a, b),
        |_| {
            let name = match op {
                "bmm" => "BmmBackward0",
                "dot" => "DotBackward0",
                _ if a.ndim() == 2 && b.ndim() == 2 => "MmBackward0",
                _ => "MatmulBackward0",
            };
            Ok(MatmulBackward {
                name,
                a: b.requires_grad().then(|| SavedTensor::input(a)),
                b: a.requires_grad().then(|| SavedTensor::input(b)),
                a_shape: a.shape().clone(),
                b_shape: b.shape().clone(),
            }
            .into())
        },
    )
}

fn batched_raw(op: &str, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (ra, rb) = (a.ndim(), b.ndim());
    let (n, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
    let (k2, p) = (b.shape()[rb - 2], b.shape()[rb - 1]);
    if k != k2 {
        bail!(
            Runtime,
            "{}: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{}) (shapes {} and {})",
            op,
            n,
            k,
            k2,
            p,
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        );
    }
    let batch = broadcast_shapes(&a.shape()[..ra - 2], &b.shape()[..rb - 2]).map_err(|_| {
        crate::error::Error::Runtime(format!(
            "{}: batch dimensions of shapes {} and {} cannot be broadcast",
            op,
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        ))
    })?;
    let mut out_shape: Shape = batch.clone();
    out_shape.extend_from_slice(&[n, p]);
    let dtype = a.dtype();
    if a.is_gpu() || b.is_gpu() {
        super::same_device(op, &[a, b])?;
        return gpu_batched(a, b, &batch, n, k, p, &out_shape);
    }
    // bfloat16 runs natively where the CPU has AVX512-BF16; other half and
    // integer products run in float32 / float64 and are cast back (the gemm
    // crate's float16 path measured 3x slower than that here, and rounds
    // its partial sums to float16).
    let compute = match dtype {
        DType::F64 => DType::F64,
        DType::BF16 if crate::backend::cpu::gemm_bf16::available() => dtype,
        d if d.is_float() => DType::F32,
        _ => DType::F64,
    };
    let (ca, mut cb) = (to_dtype(a, compute)?, to_dtype(b, compute)?);
    // The GEMM kernel is slow when the right operand is contiguous along a
    // long k (g @ colsᵀ); for short k (x @ w.T of small layers) the copy costs
    // more than it saves. Transposing costs one pass over an operand against
    // the product's n·k·p: either copy b row-major, or, when a is smaller,
    // compute (bᵀ aᵀ)ᵀ, whose right operand is then aᵀ.
    // (The bfloat16 kernel packs its operands from any strides.)
    if cb.strides()[rb - 2] == 1
        && cb.strides()[rb - 1] != 1
        && n.min(p) >= 16
        && k > 1024
        && compute != DType::BF16
    {
        if k * p > k * n + n * p {
            use super::shape::matrix_transpose as mt;
            let ct = batched_raw(op, &mt(&cb)?, &mt(&ca)?)?;
            return to_dtype(&super::copy::contiguous_clone(&mt(&ct)?)?, dtype);
        }
        cb = super::copy::contiguous_clone(&cb)?;
    }
    let out = Tensor::for_output(&out_shape, compute)?;
    match compute {
        DType::F64 => run::<f64>(&ca, &cb, &out, &batch, n, k, p, false)?,
        DType::BF16 => run::<half::bf16>(&ca, &cb, &out, &batch, n, k, p, false)?,
        _ => run::<f32>(&ca, &cb, &out, &batch, n, k, p, false)?,
    }
    to_dtype(&out, dtype)
}

/// out = a @ b per batch index, or out += a @ b with `acc`.
#[allow(clippy::too_many_arguments)]
fn run<T: GemmElem + Element>(
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    batch: &[usize],
    n: usize,
    k: usize,
    p: usize,
    acc: bool,
) -> Result<()> {
    let mut bshape: Vec<i64> = batch.iter().map(|&d| d as i64).collect();
    bshape.extend_from_slice(&[-1, -1]);
    let (la, lb) = (a.layout().expand(&bshape)?, b.layout().expand(&bshape)?);
    let nb = batch.len();
    let (pa, pb, po) = (P(a.ptr::<T>()?), P(b.ptr::<T>()?), P(out.ptr::<T>()?));
    let count = numel(batch);
    let offsets = |i: usize| {
        let (mut rem, mut oa, mut ob) = (i, 0isize, 0isize);
        for d in (0..nb).rev() {
            let idx = (rem % batch[d]) as isize;
            rem /= batch[d];
            oa += idx * la.strides[d];
            ob += idx * lb.strides[d];
        }
        (oa, ob)
    };
    let mat = |ptr: P<T>, off: isize, rs: isize, cs: isize| Mat {
        ptr: ptr.get().wrapping_offset(off),
        rs,
        cs,
    };
    let (ars, acs, brs, bcs) =
        (la.strides[nb], la.strides[nb + 1], lb.strides[nb], lb.strides[nb + 1]);
    let one = |i: usize, threads: usize| {
        let (oa, ob) = offsets(i);
        let dst = mat(po, (i * n * p) as isize, p as isize, 1);
        // SAFETY: offsets come from layouts inside the storages; dst is a fresh buffer.
        unsafe { gemm(n, p, k, dst, mat(pa, oa, ars, acs), mat(pb, ob, brs, bcs), threads, acc) };
    };
    let threads = crate::backend::cpu::threads();
    if parallel_for(n, p, k) && (count < threads || parallel_for(n / 4, p / 4, k)) {
        (0..count).for_each(|i| one(i, threads));
    } else if count > 1 && parallel_for(n * count, p, k) {
        crate::backend::cpu::team::for_each(count, |i| one(i, 1));
    } else {
        (0..count).for_each(|i| one(i, 1));
    }
    Ok(())
}

/// The GPU product: GEMM over strided operands, float16 in its own kernel
/// variant, bfloat16 read packed by its own GEMM (float32 out), everything
/// else in float32 (integer and bfloat16 products are cast back).
/// Batch dims that cannot be walked with one stride become one dispatch per
/// leading index.
fn gpu_batched(
    a: &Tensor,
    b: &Tensor,
    batch: &[usize],
    n: usize,
    k: usize,
    p: usize,
    out_shape: &[usize],
) -> Result<Tensor> {
    use crate::backend::gpu::exec::Variant;
    use crate::backend::gpu::matmul::{gemm, Mat};
    use crate::backend::gpu::matmul_bf16;
    use crate::tensor::layout::{contiguous_strides, Layout};
    let dtype = a.dtype();
    let compute = dtype.gpu_compute();
    // bfloat16 operands stay packed: their GEMM widens them as it loads.
    let packed = dtype == DType::BF16;
    let held = if packed { dtype } else { compute };
    let operand = |t: &Tensor| -> Result<Tensor> {
        let t = to_dtype(t, held)?;
        // The kernel walks non-negative strides only (flipped views are copied).
        if t.strides().iter().any(|&s| s < 0) {
            return super::copy::clone_as(&t, held);
        }
        Ok(t)
    };
    let (ca, cb) = (operand(a)?, operand(b)?);
    let mut bshape: Vec<i64> = batch.iter().map(|&d| d as i64).collect();
    bshape.extend_from_slice(&[-1, -1]);
    let (la, lb) = (ca.layout().expand(&bshape)?, cb.layout().expand(&bshape)?);
    let nb = batch.len();
    let out = Tensor::empty_on(out_shape, compute, crate::tensor::Device::Gpu)?;
    let ob = contiguous_strides(batch);
    let (cshape, [sa, sb, so]) =
        Layout::coalesce(batch, [&la.strides[..nb], &lb.strides[..nb], &ob[..]]);
    let (ba, bb) = (ca.storage().gpu_packed_buffer()?, cb.storage().gpu_packed_buffer()?);
    let run = |count: usize, k: usize, ma: Mat, mb: Mat, c: &Tensor, c_off: usize| {
        let cbuf = c.storage().gpu_buffer()?;
        if packed {
            matmul_bf16::gemm(n, p, k, count, ma, mb, cbuf, c_off)
        } else {
            gemm(n, p, k, count, ma, mb, cbuf, c_off, Variant::of(compute))
        }
    };
    if packed && !matmul_bf16::fits_whole(ba, bb, out.storage().gpu_buffer()?)? {
        // Beyond the binding limit: the float32 GEMM, which binds windows.
        let (wa, wb) = (to_dtype(a, compute)?, to_dtype(b, compute)?);
        return to_dtype(&gpu_batched(&wa, &wb, batch, n, k, p, out_shape)?, dtype);
    }
    let last = cshape.len().saturating_sub(1);
    let inner = cshape.get(last).copied().unwrap_or(1);
    let stride = |s: &[isize]| s.get(last).copied().unwrap_or(0);
    let outer: usize = cshape[..last.min(cshape.len())].iter().product();
    if let Some(s) = split_k(outer * inner, n, p, k, compute) {
        // k in s slices: a batch of s products into scratch, then their sum.
        let ks = (k / s) as isize;
        let ma = Mat {
            buf: ba,
            off: la.offset,
            bs: ks * la.strides[nb + 1],
            rs: la.strides[nb],
            cs: la.strides[nb + 1],
        };
        let mb = Mat {
            buf: bb,
            off: lb.offset,
            bs: ks * lb.strides[nb],
            rs: lb.strides[nb],
            cs: lb.strides[nb + 1],
        };
        let parts = Tensor::empty_on(&[s, n, p], compute, crate::tensor::Device::Gpu)?;
        run(s, k / s, ma, mb, &parts, 0)?;
        let sum = super::reduce::sum(&parts, Some(&[0]), false, None)?;
        return to_dtype(
            &reshape(&sum, &out_shape.iter().map(|&d| d as i64).collect::<Vec<_>>())?,
            dtype,
        );
    }
    for i in 0..outer {
        let (mut rem, mut oa, mut obb, mut oo) = (i, 0isize, 0isize, 0isize);
        for d in (0..last).rev() {
            let idx = (rem % cshape[d]) as isize;
            rem /= cshape[d];
            oa += idx * sa[d];
            obb += idx * sb[d];
            oo += idx * so[d];
        }
        let ma = Mat {
            buf: ba,
            off: (la.offset as isize + oa) as usize,
            bs: stride(&sa),
            rs: la.strides[nb],
            cs: la.strides[nb + 1],
        };
        let mb = Mat {
            buf: bb,
            off: (lb.offset as isize + obb) as usize,
            bs: stride(&sb),
            rs: lb.strides[nb],
            cs: lb.strides[nb + 1],
        };
        run(inner, k, ma, mb, &out, oo as usize * n * p)?;
    }
    to_dtype(&out, dtype)
}

/// Slices of k for a lone float32 product whose 128 x 128 output tiles are
/// too few to fill a GPU (64 at 1024^3) while k is long: enough slices for
/// about 256 workgroups, each at least 256 deep and a multiple of 8. float16
/// is never split (its partial sums would round to float16).
fn split_k(batch: usize, n: usize, p: usize, k: usize, compute: DType) -> Option<usize> {
    use crate::backend::gpu::matmul::TILE;
    let tiles = n.div_ceil(TILE) * p.div_ceil(TILE);
    if batch != 1 || compute != DType::F32 {
        return None;
    }
    [64, 32, 16, 8, 4, 2]
        .into_iter()
        .find(|&s| tiles * s <= 256 && k.is_multiple_of(8 * s) && k / s >= 256)
}

pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_dtypes("matmul", a, b)?;
    let (ra, rb) = (a.ndim(), b.ndim());
    if ra == 0 || rb == 0 {
        bail!(
            Runtime,
            "both arguments to matmul need to be at least 1D, but they are {}D and {}D",
            ra,
            rb
        );
    }
    match (ra, rb) {
        (1, 1) => dot(a, b),
        (1, _) => squeeze_dim(&batched("matmul", &unsqueeze(a, 0)?, b)?, -2),
        (_, 1) => squeeze_dim(&batched("matmul", a, &unsqueeze(b, 1)?)?, -1),
        _ => batched("matmul", a, b),
    }
}

pub fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 2 || b.ndim() != 2 {
        bail!(
            Runtime,
            "mm: expected 2D tensors, got {}D and {}D (shapes {} and {})",
            a.ndim(),
            b.ndim(),
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        );
    }
    check_dtypes("mm", a, b)?;
    batched("mm", a, b)
}

pub fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 3 || b.ndim() != 3 {
        bail!(
            Runtime,
            "bmm: expected 3D tensors, got {}D and {}D (shapes {} and {})",
            a.ndim(),
            b.ndim(),
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        );
    }
    if a.shape()[0] != b.shape()[0] {
        bail!(
            Runtime,
            "bmm: batch sizes differ: {} and {}",
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        );
    }
    check_dtypes("bmm", a, b)?;
    batched("bmm", a, b)
}

pub fn mv(a: &Tensor, v: &Tensor) -> Result<Tensor> {
    if a.ndim() != 2 || v.ndim() != 1 {
        bail!(
            Runtime,
            "mv: expected a 2D matrix and a 1D vector, got shapes {} and {}",
            fmt_shape(a.shape()),
            fmt_shape(v.shape())
        );
    }
    matmul(a, v)
}

pub fn dot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 1 || b.ndim() != 1 {
        bail!(Runtime, "1D tensors expected, but got {}D and {}D tensors", a.ndim(), b.ndim());
    }
    if a.shape()[0] != b.shape()[0] {
        bail!(
            Runtime,
            "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
            a.shape()[0],
            b.shape()[0],
            a.shape()[0],
            b.shape()[0]
        );
    }
    check_dtypes("dot", a, b)?;
    let r = batched("dot", &unsqueeze(a, 0)?, &unsqueeze(b, 1)?)?;
    reshape(&r, &[])
}

pub fn outer(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 1 || b.ndim() != 1 {
        bail!(Runtime, "outer: expected 1D tensors, got {}D and {}D", a.ndim(), b.ndim());
    }
    let common = crate::tensor::dtype::promote(a.dtype(), b.dtype());
    let (a, b) = (to_dtype(a, common)?, to_dtype(b, common)?);
    super::elementwise::binary(
        super::elementwise::Binary::Mul,
        &super::Operand::T(unsqueeze(&a, 1)?),
        &super::Operand::T(unsqueeze(&b, 0)?),
        None,
    )
}

/// F.linear: x @ wᵀ (+ b), the transpose read in place by the GEMM.
pub fn linear(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
    if w.ndim() != 2 && w.ndim() != 1 {
        bail!(
            Runtime,
            "linear: expected weight to be 1-D or 2-D, but got weight of size {}",
            fmt_shape(w.shape())
        );
    }
    check_dtypes("linear", x, w)?;
    if let Some(b) = b.filter(|b| fuses_bias(x, w, b)) {
        return autograd::record(
            &[x, w, b],
            || linear_raw(x, w, b),
            |_| {
                Ok(LinearBackward {
                    x: w.requires_grad().then(|| SavedTensor::input(x)),
                    w: x.requires_grad().then(|| SavedTensor::input(w)),
                }
                .into())
            },
        );
    }
    let y = matmul(x, &super::shape::t2(w)?)?;
    match b {
        Some(b) => {
            if b.dtype() != y.dtype() {
                bail!(
                    Runtime,
                    "linear: expected bias to have dtype {}, got {}",
                    y.dtype().name(),
                    b.dtype().name()
                );
            }
            super::elementwise::binary(
                super::elementwise::Binary::Add,
                &super::Operand::T(y),
                &super::Operand::T(b.clone()),
                None,
            )
        }
        None => Ok(y),
    }
}

/// Whether x @ wᵀ + b runs as one GEMM that accumulates onto rows of b: a
/// float32/64 CPU batch of rows and a bias of one value per output.
fn fuses_bias(x: &Tensor, w: &Tensor, b: &Tensor) -> bool {
    matches!(x.dtype(), DType::F32 | DType::F64)
        && !x.is_gpu()
        && !w.is_gpu()
        && !b.is_gpu()
        && b.dtype() == x.dtype()
        && x.ndim() == 2
        && w.ndim() == 2
        && x.shape()[1] == w.shape()[1]
        && b.shape().as_slice() == [w.shape()[0]]
}

fn linear_raw(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (n, k, p) = (x.shape()[0], x.shape()[1], w.shape()[0]);
    let out = Tensor::for_output(&[n, p], x.dtype())?;
    let b = super::copy::contiguous(b)?;
    crate::dispatch_float!(x.dtype(), T => {
        // SAFETY: b holds p elements, out n rows of p.
        let (src, dst) = unsafe { (std::slice::from_raw_parts(b.ptr::<T>()?, p), std::slice::from_raw_parts_mut(out.ptr::<T>()?, n * p)) };
        dst.chunks_exact_mut(p.max(1)).for_each(|row| row.copy_from_slice(src));
        run::<T>(x, &super::shape::t2(w)?, &out, &[], n, k, p, true)?;
    });
    Ok(out)
}

/// d(x@wᵀ + b): g@w for x, gᵀ@x for w, the column sums of g for b.
#[derive(Clone)]
pub struct LinearBackward {
    x: Option<SavedTensor>,
    w: Option<SavedTensor>,
}

impl Backward for LinearBackward {
    fn name(&self) -> String {
        "AddmmBackward0".into()
    }
    fn apply(&self, node: &std::sync::Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let g = &grads[0];
        let mut out = vec![None, None, None];
        if let (true, Some(w)) = (node.needs_input_grad(0), &self.w) {
            out[0] = Some(matmul(g, &w.unpack(node)?)?);
        }
        if let (true, Some(x)) = (node.needs_input_grad(1), &self.x) {
            out[1] = Some(matmul(&super::shape::t2(g)?, &x.unpack(node)?)?);
        }
        if node.needs_input_grad(2) {
            out[2] = Some(math::sum_to(g, &g.shape()[1..])?);
        }
        Ok(out)
    }
}

/// d(a@b): g@bᵀ for a and aᵀ@g for b, summed over broadcast batch dims.
#[derive(Clone)]
pub struct MatmulBackward {
    name: &'static str,
    a: Option<SavedTensor>,
    b: Option<SavedTensor>,
    a_shape: Shape,
    b_shape: Shape,
}

impl Backward for MatmulBackward {
    fn name(&self) -> String {
        self.name.to_string()
    }
    fn apply(&self, node: &std::sync::Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        use super::shape::matrix_transpose as mt;
        let g = &grads[0];
        let mut out = vec![None, None];
        if let (true, Some(b)) = (node.needs_input_grad(0), &self.b) {
            out[0] =
                Some(math::sum_to(&batched("matmul", g, &mt(&b.unpack(node)?)?)?, &self.a_shape)?);
        }
        if let (true, Some(a)) = (node.needs_input_grad(1), &self.a) {
            out[1] =
                Some(math::sum_to(&batched("matmul", &mt(&a.unpack(node)?)?, g)?, &self.b_shape)?);
        }
        Ok(out)
    }
}
