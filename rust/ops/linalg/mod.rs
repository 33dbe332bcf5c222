//! matmul with torch's rules (1-D, 2-D, batched with batch broadcasting), mm,
//! bmm, mv, dot, outer — all through the GEMM kernel. The decompositions of
//! rumus.linalg (through faer on the host) are in `decomp` and `solve`.

pub mod decomp;
pub mod eig;
pub mod fused;
pub mod gpu;
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
        return gpu::gpu_batched(a, b, &batch, n, k, p, &out_shape, None);
    }
    // bfloat16 runs natively where the CPU has AVX512-BF16, float16 where it
    // has AVX-512F (widened while packed); other half and integer products
    // run in float32 / float64 and are cast back (the gemm crate's float16
    // path measured 3x slower than that here, and rounds its partial sums
    // to float16).
    let compute = match dtype {
        DType::F64 => DType::F64,
        DType::BF16 if crate::backend::cpu::gemm_bf16::available() => dtype,
        DType::F16 if crate::backend::cpu::gemm_f16::available() => dtype,
        d if d.is_float() => DType::F32,
        _ => DType::F64,
    };
    let (ca, mut cb) = (to_dtype(a, compute)?, to_dtype(b, compute)?);
    // The GEMM kernel is slow when the right operand is contiguous along a
    // long k (g @ colsᵀ); for short k (x @ w.T of small layers) the copy costs
    // more than it saves. Transposing costs one pass over an operand against
    // the product's n·k·p: either copy b row-major, or, when a is smaller,
    // compute (bᵀ aᵀ)ᵀ, whose right operand is then aᵀ.
    // (The half kernels pack their operands from any strides.)
    if cb.strides()[rb - 2] == 1
        && cb.strides()[rb - 1] != 1
        && n.min(p) >= 16
        && k > 1024
        && !compute.is_half()
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
        DType::F16 => run::<half::f16>(&ca, &cb, &out, &batch, n, k, p, false)?,
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
    // On the GPU the bias is the GEMM's epilogue: one dispatch.
    if let Some(b) = b.filter(|b| fused::fuses(x, w, Some(b), None)) {
        return fused::linear_act(x, w, Some(b), crate::backend::gpu::matmul::Act::None, None);
    }
    if let Some(y) = linear_folded(x, w, b)? {
        return Ok(y);
    }
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

/// x of shape (..., k) with two or more leading dims, on the CPU: its rows
/// folded into one (rows, k) matrix (a view when x is contiguous), as
/// PyTorch does. As a batch over the leading dim, every product re-packed
/// the weight and the weight's gradient was a stack of per-batch products
/// summed afterwards (rounded to the half type first, under autocast).
fn linear_folded(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Option<Tensor>> {
    let nd = x.ndim();
    let k = x.shape().last().copied().unwrap_or(0);
    let folds = nd > 2
        && x.dtype().is_float()
        && !x.is_gpu()
        && !w.is_gpu()
        && w.ndim() == 2
        && w.shape()[1] == k
        && k > 0
        && b.is_none_or(|b| !b.is_gpu() && b.shape().as_slice() == [w.shape()[0]]);
    if !folds {
        return Ok(None);
    }
    let y = linear(&reshape(x, &[-1, k as i64])?, w, b)?;
    let mut shape: Vec<i64> = x.shape()[..nd - 1].iter().map(|&d| d as i64).collect();
    shape.push(w.shape()[0] as i64);
    Ok(Some(reshape(&y, &shape)?))
}

/// Whether x @ wᵀ + b runs as one GEMM that accumulates onto rows of b: a
/// CPU batch of rows (float32/64, or a half type, where the bias is added to
/// the float32 sums before the one rounding) and a bias of one value per
/// output.
fn fuses_bias(x: &Tensor, w: &Tensor, b: &Tensor) -> bool {
    x.dtype().is_float()
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
    let dtype = x.dtype();
    let own_kernel = match dtype {
        DType::BF16 => crate::backend::cpu::gemm_bf16::available(),
        DType::F16 => crate::backend::cpu::gemm_f16::available(),
        _ => true,
    };
    if !own_kernel {
        // A half type on a CPU without its kernel: float32 sums plus the
        // bias, rounded once (a rounded product plus the bias rounds twice).
        let f = |t: &Tensor| to_dtype(t, DType::F32);
        return to_dtype(&linear_raw(&f(x)?, &f(w)?, &f(b)?)?, dtype);
    }
    let out = Tensor::for_output(&[n, p], dtype)?;
    let b = super::copy::contiguous(b)?;
    match dtype {
        DType::F64 => linear_acc::<f64>(x, w, &b, &out, n, k, p)?,
        DType::BF16 => linear_acc::<half::bf16>(x, w, &b, &out, n, k, p)?,
        DType::F16 => linear_acc::<half::f16>(x, w, &b, &out, n, k, p)?,
        _ => linear_acc::<f32>(x, w, &b, &out, n, k, p)?,
    }
    Ok(out)
}

/// out (n x p) = rows of b, then += x @ wᵀ in the GEMM.
fn linear_acc<T: GemmElem + Element>(
    x: &Tensor,
    w: &Tensor,
    b: &Tensor,
    out: &Tensor,
    n: usize,
    k: usize,
    p: usize,
) -> Result<()> {
    // SAFETY: b holds p elements, out n rows of p.
    let (src, dst) = unsafe {
        (
            std::slice::from_raw_parts(b.ptr::<T>()?, p),
            std::slice::from_raw_parts_mut(out.ptr::<T>()?, n * p),
        )
    };
    dst.chunks_exact_mut(p.max(1)).for_each(|row| row.copy_from_slice(src));
    run::<T>(x, &super::shape::t2(w)?, out, &[], n, k, p, true)
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
