//! Dense decompositions on the CPU through faer: LU with partial pivoting,
//! Cholesky, triangular solves, QR, symmetric eigendecomposition and SVD of
//! batches of row-major matrices. Each function takes the batch as one
//! contiguous slice (`count` matrices of `m x n`) and returns contiguous
//! row-major results plus, where LAPACK reports one, an `info` per matrix
//! (0: success; k > 0: the 1-based index LAPACK's routine would report).
//!
//! Large batches of small matrices run in parallel across matrices (rayon,
//! each factorization single-threaded); otherwise matrices go one after the
//! other and faer parallelizes inside each.

use super::P;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::lu::partial_pivoting::factor as lu;
use faer::{Mat, MatMut, MatRef, Par, Side};
use rayon::prelude::*;

/// The float types the decompositions run in.
pub trait Real:
    faer::traits::RealField
    + crate::tensor::Element
    + num_traits::Float
    + std::ops::AddAssign
    + Copy
    + Send
    + Sync
{
}
impl Real for f32 {}
impl Real for f64 {}

fn zero<T: Real>() -> T {
    <T as num_traits::Zero>::zero()
}

fn one<T: Real>() -> T {
    <T as num_traits::One>::one()
}

/// Matrices from this size up are factored by several threads. Below it the
/// threads' hand-offs cost more than they save (a 64 x 64 QR took 10x longer
/// on two threads than on one).
const PAR_DIM: usize = 256;

/// Runs `f(i, par)` for matrix i of `count` matrices of `dim` rows/cols, and
/// sets faer's global parallelism to match (its high-level qr, svd, eigh and
/// llt read that setting, not an argument).
fn each(count: usize, dim: usize, f: impl Fn(usize, Par) + Sync + Send) {
    let threads = super::threads();
    if count > 1 && threads > 1 && (count >= threads || dim <= 96) {
        faer::set_global_parallelism(Par::Seq);
        (0..count).into_par_iter().for_each(|i| f(i, Par::Seq));
    } else {
        let par = if threads > 1 && dim >= PAR_DIM { Par::rayon(threads) } else { Par::Seq };
        faer::set_global_parallelism(par);
        (0..count).for_each(|i| f(i, par));
    }
}

/// Matrix i of a batch of row-major m x n matrices.
fn mat<T: Real>(a: &[T], i: usize, m: usize, n: usize) -> MatRef<'_, T> {
    MatRef::from_row_major_slice(&a[i * m * n..(i + 1) * m * n], m, n)
}

/// Matrix i of an output batch (row-major m x n), written through a raw pointer.
///
/// SAFETY: callers give each i to one task only, and `p` holds `count * m * n` elements.
unsafe fn out<'a, T: Real>(p: P<T>, i: usize, m: usize, n: usize) -> MatMut<'a, T> {
    let s = std::slice::from_raw_parts_mut(p.get().add(i * m * n), m * n);
    MatMut::from_row_major_slice_mut(s, m, n)
}

/// Output buffers of `count * size` elements.
fn buf<T: Real>(count: usize, size: usize) -> Vec<T> {
    vec![zero::<T>(); count * size]
}

fn stack(req: faer::dyn_stack::StackReq) -> MemBuffer {
    MemBuffer::new(req)
}

/// The first zero on U's diagonal (1-based), or 0: LAPACK getrf's info.
fn zero_pivot<T: Real>(lu: MatRef<'_, T>) -> i32 {
    let k = lu.nrows().min(lu.ncols());
    (0..k).find(|&j| lu[(j, j)] == zero::<T>()).map_or(0, |j| j as i32 + 1)
}

/// LAPACK's pivots (1-based row swaps applied in order) of the permutation
/// `fwd` (row i of P A is row fwd[i] of A), for the first `k` rows.
fn pivots(fwd: &[usize], k: usize) -> Vec<i32> {
    let n = fwd.len();
    let (mut cur, mut pos): (Vec<usize>, Vec<usize>) = ((0..n).collect(), (0..n).collect());
    let mut out = Vec::with_capacity(k);
    for i in 0..k {
        let j = pos[fwd[i]];
        out.push(j as i32 + 1);
        let (ri, rj) = (cur[i], cur[j]);
        cur.swap(i, j);
        pos[ri] = j;
        pos[rj] = i;
    }
    out
}

/// One LU factorization in place (faer's, column-major); returns its row permutation.
fn lu_one<T: Real>(a: &mut Mat<T>, par: Par) -> Vec<usize> {
    let (m, n) = (a.nrows(), a.ncols());
    let (mut fwd, mut inv) = (vec![0usize; m], vec![0usize; m]);
    let mut mem = stack(lu::lu_in_place_scratch::<usize, T>(m, n, par, Default::default()));
    lu::lu_in_place(
        a.as_mut(),
        &mut fwd,
        &mut inv,
        par,
        MemStack::new(&mut mem),
        Default::default(),
    );
    fwd
}

/// Packed LU factors (L strictly below the diagonal, U on and above), LAPACK
/// pivots (count x min(m, n), 1-based) and getrf's info per matrix.
pub fn lu_factor<T: Real>(
    a: &[T],
    count: usize,
    m: usize,
    n: usize,
) -> (Vec<T>, Vec<i32>, Vec<i32>) {
    let k = m.min(n);
    let (mut lu_out, mut piv, mut info) =
        (buf::<T>(count, m * n), vec![0i32; count * k], vec![0i32; count]);
    let (po, pp, pi) = (P(lu_out.as_mut_ptr()), P(piv.as_mut_ptr()), P(info.as_mut_ptr()));
    each(count, m.max(n), |i, par| {
        let mut f = mat(a, i, m, n).to_owned();
        let fwd = lu_one(&mut f, par);
        // SAFETY: each i writes its own matrix, pivots and info.
        unsafe {
            out(po, i, m, n).copy_from(f.as_ref());
            let p = pivots(&fwd, k);
            std::ptr::copy_nonoverlapping(p.as_ptr(), pp.get().add(i * k), k);
            *pi.get().add(i) = zero_pivot(f.as_ref());
        }
    });
    (lu_out, piv, info)
}

/// Applies LAPACK pivots to the rows of `b` (forward: as getrs does before
/// the solves; backward: their inverse).
fn swap_rows<T: Real>(mut b: MatMut<'_, T>, piv: &[i32], forward: bool) {
    let mut one = |i: usize| {
        let j = piv[i] as usize - 1;
        if j != i {
            for c in 0..b.ncols() {
                let t = b[(i, c)];
                b[(i, c)] = b[(j, c)];
                b[(j, c)] = t;
            }
        }
    };
    if forward {
        (0..piv.len()).for_each(&mut one);
    } else {
        (0..piv.len()).rev().for_each(&mut one);
    }
}

/// Solves A X = B (or Aᵀ X = B with `adjoint`) from packed LU factors and
/// pivots of n x n matrices, for B of n x k per matrix.
pub fn lu_solve<T: Real>(
    lu_data: &[T],
    piv: &[i32],
    b: &[T],
    count: usize,
    n: usize,
    k: usize,
    adjoint: bool,
) -> Vec<T> {
    let mut x = b.to_vec();
    let px = P(x.as_mut_ptr());
    each(count, n, |i, par| {
        let f = mat(lu_data, i, n, n).to_owned();
        let p = &piv[i * n..(i + 1) * n];
        // SAFETY: each i writes its own right-hand side.
        let mut rhs = unsafe { out(px, i, n, k) };
        let mut tmp = rhs.to_owned();
        solve_packed(f.as_ref(), p, tmp.as_mut(), adjoint, par);
        rhs.copy_from(tmp.as_ref());
    });
    x
}

fn solve_packed<T: Real>(
    f: MatRef<'_, T>,
    piv: &[i32],
    mut b: MatMut<'_, T>,
    adjoint: bool,
    par: Par,
) {
    use faer::linalg::triangular_solve as ts;
    if !adjoint {
        swap_rows(b.as_mut(), piv, true);
        ts::solve_unit_lower_triangular_in_place(f, b.as_mut(), par);
        ts::solve_upper_triangular_in_place(f, b.as_mut(), par);
    } else {
        ts::solve_lower_triangular_in_place(f.transpose(), b.as_mut(), par);
        ts::solve_unit_upper_triangular_in_place(f.transpose(), b.as_mut(), par);
        swap_rows(b.as_mut(), piv, false);
    }
}

/// X = A⁻¹ B for n x n A and n x k B per matrix, with getrf's info. With
/// `b == None`, B is the identity (the inverse).
pub fn solve<T: Real>(
    a: &[T],
    b: Option<&[T]>,
    count: usize,
    n: usize,
    k: usize,
) -> (Vec<T>, Vec<i32>) {
    let (mut x, mut info) = (buf::<T>(count, n * k), vec![0i32; count]);
    let (px, pi) = (P(x.as_mut_ptr()), P(info.as_mut_ptr()));
    each(count, n, |i, par| {
        let mut f = mat(a, i, n, n).to_owned();
        let fwd = lu_one(&mut f, par);
        let z = zero_pivot(f.as_ref());
        let mut rhs = match b {
            Some(b) => mat(b, i, n, k).to_owned(),
            None => Mat::identity(n, n),
        };
        if z == 0 {
            solve_packed(f.as_ref(), &pivots(&fwd, n), rhs.as_mut(), false, par);
        }
        // SAFETY: each i writes its own result and info.
        unsafe {
            out(px, i, n, k).copy_from(rhs.as_ref());
            *pi.get().add(i) = z;
        }
    });
    (x, info)
}

/// (sign, log|det|) per matrix from LU; a singular matrix gives (0, -inf).
pub fn slogdet<T: Real>(a: &[T], count: usize, n: usize) -> (Vec<T>, Vec<T>) {
    let (mut sign, mut logabs) = (buf::<T>(count, 1), buf::<T>(count, 1));
    let (ps, pl) = (P(sign.as_mut_ptr()), P(logabs.as_mut_ptr()));
    each(count, n, |i, par| {
        let mut f = mat(a, i, n, n).to_owned();
        let fwd = lu_one(&mut f, par);
        let swaps =
            pivots(&fwd, n).iter().enumerate().filter(|(j, &p)| p as usize != j + 1).count();
        let (mut s, mut l) = (if swaps % 2 == 0 { one::<T>() } else { -one::<T>() }, zero::<T>());
        for j in 0..n {
            let d = f[(j, j)];
            if d == zero::<T>() {
                (s, l) = (zero::<T>(), <T as num_traits::Float>::neg_infinity());
                break;
            }
            if d < zero::<T>() {
                s = -s;
            }
            l += num_traits::Float::ln(num_traits::Float::abs(d));
        }
        // SAFETY: each i writes its own values.
        unsafe {
            *ps.get().add(i) = s;
            *pl.get().add(i) = l;
        }
    });
    (sign, logabs)
}

/// Lower Cholesky factors of the lower triangles, with potrf's info (the
/// order of the first leading minor that is not positive-definite).
pub fn cholesky<T: Real>(a: &[T], count: usize, n: usize) -> (Vec<T>, Vec<i32>) {
    let (mut l, mut info) = (buf::<T>(count, n * n), vec![0i32; count]);
    let (pl, pi) = (P(l.as_mut_ptr()), P(info.as_mut_ptr()));
    each(count, n, |i, _| {
        let r = mat(a, i, n, n).llt(Side::Lower);
        // SAFETY: each i writes its own factor and info.
        unsafe {
            match r {
                Ok(f) => out(pl, i, n, n).copy_from(f.L()),
                Err(faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index }) => {
                    *pi.get().add(i) = index as i32 + 1
                }
            }
        }
    });
    (l, info)
}

/// X = A⁻¹ B for triangular n x n A (its `upper` or lower triangle, with a
/// unit diagonal when `unit`) and n x k B per matrix.
pub fn solve_triangular<T: Real>(
    a: &[T],
    b: &[T],
    count: usize,
    n: usize,
    k: usize,
    upper: bool,
    unit: bool,
) -> Vec<T> {
    use faer::linalg::triangular_solve as ts;
    let mut x = b.to_vec();
    let px = P(x.as_mut_ptr());
    each(count, n, |i, par| {
        let t = mat(a, i, n, n);
        // SAFETY: each i writes its own right-hand side.
        let mut rhs = unsafe { out(px, i, n, k) };
        let mut tmp = rhs.to_owned();
        match (upper, unit) {
            (true, false) => ts::solve_upper_triangular_in_place(t, tmp.as_mut(), par),
            (true, true) => ts::solve_unit_upper_triangular_in_place(t, tmp.as_mut(), par),
            (false, false) => ts::solve_lower_triangular_in_place(t, tmp.as_mut(), par),
            (false, true) => ts::solve_unit_lower_triangular_in_place(t, tmp.as_mut(), par),
        }
        rhs.copy_from(tmp.as_ref());
    });
    x
}

/// Q (m x qc) and R (rr x n) per matrix: reduced (qc = rr = min(m, n)) or
/// complete (qc = rr = m).
pub fn qr<T: Real>(a: &[T], count: usize, m: usize, n: usize, complete: bool) -> (Vec<T>, Vec<T>) {
    let k = m.min(n);
    let (qc, rr) = if complete { (m, m) } else { (k, k) };
    let (mut q, mut r) = (buf::<T>(count, m * qc), buf::<T>(count, rr * n));
    let (pq, pr) = (P(q.as_mut_ptr()), P(r.as_mut_ptr()));
    each(count, m.max(n), |i, _| {
        let f = mat(a, i, m, n).qr();
        // SAFETY: each i writes its own factors.
        unsafe {
            if complete {
                out(pq, i, m, m).copy_from(f.compute_Q());
                let (r, mut o) = (f.thin_R(), out(pr, i, m, n));
                for a in 0..r.nrows() {
                    for b in 0..n {
                        o[(a, b)] = r[(a, b)];
                    }
                }
            } else {
                out(pq, i, m, k).copy_from(f.compute_thin_Q());
                out(pr, i, k, n).copy_from(f.thin_R());
            }
        }
    });
    (q, r)
}

/// Eigenvalues (ascending) and, with `vectors`, eigenvectors (columns) of the
/// symmetric matrices whose `lower` (or upper) triangle is given. info > 0
/// when the algorithm did not converge.
pub fn eigh<T: Real>(
    a: &[T],
    count: usize,
    n: usize,
    lower: bool,
    vectors: bool,
) -> (Vec<T>, Vec<T>, Vec<i32>) {
    let side = if lower { Side::Lower } else { Side::Upper };
    let (mut w, mut v, mut info) =
        (buf::<T>(count, n), buf::<T>(count, if vectors { n * n } else { 0 }), vec![0i32; count]);
    let (pw, pv, pi) = (P(w.as_mut_ptr()), P(v.as_mut_ptr()), P(info.as_mut_ptr()));
    each(count, n, |i, _| {
        let x = mat(a, i, n, n);
        // SAFETY: each i writes its own values, vectors and info.
        unsafe {
            if vectors {
                match x.self_adjoint_eigen(side) {
                    Ok(e) => {
                        out(pw, i, n, 1).copy_from(e.S().column_vector().as_mat());
                        out(pv, i, n, n).copy_from(e.U());
                    }
                    Err(_) => *pi.get().add(i) = 1,
                }
            } else {
                match x.self_adjoint_eigenvalues(side) {
                    Ok(e) => std::ptr::copy_nonoverlapping(e.as_ptr(), pw.get().add(i * n), n),
                    Err(_) => *pi.get().add(i) = 1,
                }
            }
        }
    });
    (w, v, info)
}

/// Singular values (descending) and, with `vectors`, U (m x uc) and Vᵀ
/// (vr x n): thin (uc = vr = min(m, n)) or full (uc = m, vr = n). info > 0
/// when the algorithm did not converge.
pub fn svd<T: Real>(
    a: &[T],
    count: usize,
    m: usize,
    n: usize,
    vectors: bool,
    full: bool,
) -> (Vec<T>, Vec<T>, Vec<T>, Vec<i32>) {
    let k = m.min(n);
    let (uc, vr) = match (vectors, full) {
        (false, _) => (0, 0),
        (true, true) => (m, n),
        (true, false) => (k, k),
    };
    let (mut u, mut s, mut vt, mut info) =
        (buf::<T>(count, m * uc), buf::<T>(count, k), buf::<T>(count, vr * n), vec![0i32; count]);
    let (pu, ps, pv, pi) =
        (P(u.as_mut_ptr()), P(s.as_mut_ptr()), P(vt.as_mut_ptr()), P(info.as_mut_ptr()));
    each(count, m.max(n), |i, _| {
        let x = mat(a, i, m, n);
        // SAFETY: each i writes its own factors and info.
        unsafe {
            if !vectors {
                match x.singular_values() {
                    Ok(v) => std::ptr::copy_nonoverlapping(v.as_ptr(), ps.get().add(i * k), k),
                    Err(_) => *pi.get().add(i) = 1,
                }
                return;
            }
            let r = if full { x.svd() } else { x.thin_svd() };
            match r {
                Ok(f) => {
                    out(pu, i, m, uc).copy_from(f.U());
                    out(ps, i, k, 1).copy_from(f.S().column_vector().as_mat());
                    out(pv, i, vr, n).copy_from(f.V().transpose());
                }
                Err(_) => *pi.get().add(i) = 1,
            }
        }
    });
    (u, s, vt, info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pivots_reproduce_the_permutation() {
        let fwd = [2usize, 0, 3, 1];
        let piv = pivots(&fwd, 4);
        let mut rows: Vec<usize> = (0..4).collect();
        for (i, &p) in piv.iter().enumerate() {
            rows.swap(i, p as usize - 1);
        }
        assert_eq!(rows, fwd);
    }

    #[test]
    fn solve_and_singular_info() {
        let a = [4.0f64, 1.0, 2.0, 3.0];
        let (x, info) = solve(&a, Some(&[1.0, 2.0]), 1, 2, 1);
        assert_eq!(info, [0]);
        assert!(
            (4.0 * x[0] + x[1] - 1.0).abs() < 1e-12
                && (2.0 * x[0] + 3.0 * x[1] - 2.0).abs() < 1e-12
        );
        let (_, info) = solve(&[1.0f64, 2.0, 2.0, 4.0], None, 1, 2, 2);
        assert_eq!(info, [2]);
        let (_, info) = cholesky(&[1.0f64, 2.0, 2.0, 1.0], 1, 2);
        assert_eq!(info, [2]);
    }
}
