//! Shape, strides (in elements) and offset. Every view op is a function from
//! one Layout to another over the same storage; nothing here touches data.

use crate::bail;
use crate::error::Result;
use smallvec::SmallVec;

pub type Shape = SmallVec<[usize; 6]>;
pub type Strides = SmallVec<[isize; 6]>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub shape: Shape,
    pub strides: Strides,
    pub offset: usize,
}

pub fn contiguous_strides(shape: &[usize]) -> Strides {
    let mut strides: Strides = smallvec::smallvec![0; shape.len()];
    let mut acc = 1isize;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        acc *= shape[i].max(1) as isize;
    }
    strides
}

/// Element count; saturates instead of wrapping, so an absurd shape fails to
/// allocate rather than aliasing a small buffer.
pub fn numel(shape: &[usize]) -> usize {
    if shape.contains(&0) {
        return 0;
    }
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).unwrap_or(usize::MAX)
}

/// A Vec of `n` copies of `v`, or an error when the memory cannot be had
/// (instead of the abort an infallible allocation would be).
pub fn try_vec<T: Clone>(n: usize, v: T) -> Result<Vec<T>> {
    let mut out = Vec::new();
    if out.try_reserve_exact(n).is_err() {
        bail!(
            Runtime,
            "CPU out of memory: cannot allocate {} elements of {} bytes",
            n,
            std::mem::size_of::<T>()
        );
    }
    out.resize(n, v);
    Ok(out)
}

pub fn fmt_shape(shape: &[usize]) -> String {
    let items: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// Wraps a possibly negative dim into `0..ndim` (IndexError as in PyTorch).
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64; // a 0-d tensor accepts dims -1 and 0
    if dim < -n || dim >= n {
        bail!(
            Index,
            "Dimension out of range (expected to be in range of [{}, {}], but got {})",
            -n,
            n - 1,
            dim
        );
    }
    Ok(if dim < 0 { (dim + n) as usize } else { dim as usize })
}

/// Wraps a list of dims and rejects repeats.
pub fn wrap_dims(dims: &[i64], ndim: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        let w = wrap_dim(d, ndim)?;
        if out.contains(&w) {
            bail!(Runtime, "dim {} appears multiple times in the list of dims", w);
        }
        out.push(w);
    }
    Ok(out)
}

/// NumPy broadcasting of two shapes.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Shape> {
    let n = a.len().max(b.len());
    let mut out: Shape = smallvec::smallvec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            bail!(
                Runtime,
                "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension {}",
                da,
                db,
                i
            );
        };
    }
    Ok(out)
}

/// Fills in a `-1` entry of a requested shape and checks the element count.
pub fn infer_shape(requested: &[i64], numel: usize) -> Result<Shape> {
    let mut infer = None;
    let mut known = 1usize;
    for (i, &d) in requested.iter().enumerate() {
        if d == -1 {
            if infer.is_some() {
                bail!(Runtime, "only one dimension can be inferred");
            }
            infer = Some(i);
        } else if d < 0 {
            bail!(Runtime, "invalid shape dimension {}", d);
        } else {
            known = known.saturating_mul(d as usize);
        }
    }
    let mut shape: Shape = requested.iter().map(|&d| d.max(0) as usize).collect();
    let bad = || {
        let items: Vec<String> = requested.iter().map(|d| d.to_string()).collect();
        crate::error::Error::Runtime(format!(
            "shape '[{}]' is invalid for input of size {}",
            items.join(", "),
            numel
        ))
    };
    match infer {
        Some(i) => {
            if known == 0 || !numel.is_multiple_of(known) {
                return Err(bad());
            }
            shape[i] = numel / known;
        }
        None if known != numel => return Err(bad()),
        None => {}
    }
    Ok(shape)
}

impl Layout {
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout { shape: shape.into(), strides: contiguous_strides(shape), offset: 0 }
    }
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }
    /// Dims of size 1 may have any stride, as in PyTorch.
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1isize;
        for i in (0..self.shape.len()).rev() {
            if self.shape[i] != 1 {
                if self.strides[i] != expected {
                    return false;
                }
                expected *= self.shape[i] as isize;
            }
        }
        true
    }
    /// True when two positions share one element (a stride-0 dim of size > 1):
    /// such a view cannot be written in place.
    pub fn has_internal_overlap(&self) -> bool {
        self.shape.iter().zip(&self.strides).any(|(&n, &s)| n > 1 && s == 0)
    }
    /// Smallest and one-past-largest element offsets this layout touches.
    pub fn span(&self) -> (isize, isize) {
        if self.numel() == 0 {
            return (self.offset as isize, self.offset as isize);
        }
        let (mut lo, mut hi) = (self.offset as isize, self.offset as isize);
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            let ext = (n as isize - 1) * s;
            if ext < 0 {
                lo += ext
            } else {
                hi += ext
            }
        }
        (lo, hi + 1)
    }
    /// The dims from outermost to innermost in memory (largest stride first;
    /// size-1 and broadcast dims and ties keep their place), as PyTorch's
    /// preserve_format orders them.
    pub fn memory_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.ndim()).collect();
        for i in 1..order.len() {
            let mut j = i;
            while j > 0 {
                let (a, b) = (order[j - 1], order[j]);
                let fixed = |d: usize| self.shape[d] == 1 || self.strides[d] == 0;
                if fixed(a) || fixed(b) || self.strides[a] >= self.strides[b] {
                    break;
                }
                order.swap(j - 1, j);
                j -= 1;
            }
        }
        order
    }
    /// A dense layout of `shape` whose dims lie in memory in `order`
    /// (outermost first).
    pub fn dense_in_order(shape: &[usize], order: &[usize]) -> Layout {
        let mut strides = vec![0isize; shape.len()];
        let mut st = 1isize;
        for &d in order.iter().rev() {
            strides[d] = st;
            st *= shape[d].max(1) as isize;
        }
        Layout { shape: shape.into(), strides: strides.into(), offset: 0 }
    }
    pub fn transpose(&self, d0: i64, d1: i64) -> Result<Layout> {
        let (a, b) = (wrap_dim(d0, self.ndim())?, wrap_dim(d1, self.ndim())?);
        let mut l = self.clone();
        if self.ndim() > 0 {
            l.shape.swap(a, b);
            l.strides.swap(a, b);
        }
        Ok(l)
    }
    pub fn permute(&self, dims: &[i64]) -> Result<Layout> {
        if dims.len() != self.ndim() {
            bail!(
                Runtime,
                "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {} is not equal to len(dims) = {}",
                self.ndim(),
                dims.len()
            );
        }
        let dims = wrap_dims(dims, self.ndim())?;
        Ok(Layout {
            shape: dims.iter().map(|&d| self.shape[d]).collect(),
            strides: dims.iter().map(|&d| self.strides[d]).collect(),
            offset: self.offset,
        })
    }
    /// Elements `start, start+step, ...` below `stop` along `dim` (bounds already clamped).
    pub fn slice(&self, dim: usize, start: usize, stop: usize, step: usize) -> Result<Layout> {
        if step == 0 {
            bail!(Value, "slice step cannot be zero");
        }
        let mut l = self.clone();
        let len = if stop > start { (stop - start).div_ceil(step) } else { 0 };
        if len > 0 {
            l.offset = (self.offset as isize + start as isize * self.strides[dim]) as usize;
        }
        l.shape[dim] = len;
        l.strides[dim] = self.strides[dim] * step as isize;
        Ok(l)
    }
    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> Result<Layout> {
        if self.ndim() == 0 {
            bail!(Runtime, "narrow() cannot be applied to a 0-dim tensor.");
        }
        let d = wrap_dim(dim, self.ndim())?;
        let size = self.shape[d] as i64;
        let start = if start < 0 { start + size } else { start };
        if start < 0 || start > size {
            bail!(
                Index,
                "start out of range (expected to be in range of [{}, {}], but got {})",
                -size,
                size,
                start
            );
        }
        if length < 0 || length > size - start {
            bail!(
                Runtime,
                "start ({}) + length ({}) exceeds dimension size ({}).",
                start,
                length,
                size
            );
        }
        self.slice(d, start as usize, (start + length) as usize, 1)
    }
    /// Removes `dim` by picking element `index` (t[i]).
    pub fn select(&self, dim: usize, index: i64) -> Result<Layout> {
        let size = self.shape[dim] as i64;
        let i = if index < 0 { index + size } else { index };
        if i < 0 || i >= size {
            bail!(
                Index,
                "index {} is out of bounds for dimension {} with size {}",
                index,
                dim,
                size
            );
        }
        let mut l = self.clone();
        l.offset = (self.offset as isize + i as isize * self.strides[dim]) as usize;
        l.shape.remove(dim);
        l.strides.remove(dim);
        Ok(l)
    }
    /// The diagonal of dims `d1` and `d2` (wrapped, distinct) shifted by
    /// `offset` (above the main one when positive), as a last dim.
    pub fn diagonal(&self, offset: i64, d1: usize, d2: usize) -> Layout {
        let (n1, n2) = (self.shape[d1] as i64, self.shape[d2] as i64);
        let len = if offset >= 0 { n1.min(n2 - offset) } else { (n1 + offset).min(n2) }.max(0);
        let mut l = self.clone();
        if len > 0 {
            let shift = if offset >= 0 {
                offset * self.strides[d2] as i64
            } else {
                -offset * self.strides[d1] as i64
            };
            l.offset = (self.offset as i64 + shift) as usize;
        }
        let stride = self.strides[d1] + self.strides[d2];
        for d in [d1.max(d2), d1.min(d2)] {
            l.shape.remove(d);
            l.strides.remove(d);
        }
        l.shape.push(len as usize);
        l.strides.push(stride);
        l
    }
    pub fn unsqueeze(&self, dim: i64) -> Result<Layout> {
        let d = wrap_dim(dim, self.ndim() + 1)?;
        let mut l = self.clone();
        let stride = if d < self.ndim() { self.strides[d] * self.shape[d] as isize } else { 1 };
        l.shape.insert(d, 1);
        l.strides.insert(d, stride);
        Ok(l)
    }
    pub fn squeeze(&self, dims: Option<&[i64]>) -> Result<Layout> {
        let keep: Vec<bool> = match dims {
            None => self.shape.iter().map(|&n| n != 1).collect(),
            Some(ds) => {
                let ds = wrap_dims(ds, self.ndim())?;
                (0..self.ndim()).map(|i| !(ds.contains(&i) && self.shape[i] == 1)).collect()
            }
        };
        let mut l = Layout { shape: Shape::new(), strides: Strides::new(), offset: self.offset };
        for i in 0..self.ndim() {
            if keep[i] {
                l.shape.push(self.shape[i]);
                l.strides.push(self.strides[i]);
            }
        }
        Ok(l)
    }
    /// Broadcast view: new leading dims and size-1 dims get stride 0. `-1` keeps a size.
    pub fn expand(&self, sizes: &[i64]) -> Result<Layout> {
        let n = sizes.len();
        if n < self.ndim() {
            bail!(
                Runtime,
                "expand: the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
                n,
                self.ndim()
            );
        }
        let lead = n - self.ndim();
        let mut l = Layout { shape: Shape::new(), strides: Strides::new(), offset: self.offset };
        for (i, &want) in sizes.iter().enumerate() {
            if i < lead {
                if want < 0 {
                    bail!(
                        Runtime,
                        "expand: -1 is not allowed in a leading, non-existing dimension {}",
                        i
                    );
                }
                l.shape.push(want as usize);
                l.strides.push(0);
                continue;
            }
            let (have, stride) = (self.shape[i - lead], self.strides[i - lead]);
            if want == -1 || want as usize == have {
                l.shape.push(have);
                l.strides.push(stride);
            } else if have == 1 && want >= 0 {
                l.shape.push(want as usize);
                l.strides.push(0);
            } else {
                bail!(
                    Runtime,
                    "The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton dimension {}.  Target sizes: {:?}.  Tensor sizes: {}",
                    want,
                    have,
                    i,
                    sizes,
                    fmt_shape(&self.shape)
                );
            }
        }
        Ok(l)
    }
    /// Strides of this layout broadcast to `shape` (borrowed when no broadcast is needed).
    pub fn broadcast_strides(&self, shape: &[usize]) -> Result<std::borrow::Cow<'_, [isize]>> {
        if self.shape.as_slice() == shape {
            return Ok(std::borrow::Cow::Borrowed(&self.strides));
        }
        Ok(std::borrow::Cow::Owned(self.broadcast_to(shape)?.strides.to_vec()))
    }
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout> {
        if self.shape.as_slice() == shape {
            return Ok(self.clone());
        }
        let sizes: SmallVec<[i64; 6]> = shape.iter().map(|&d| d as i64).collect();
        self.expand(&sizes)
    }
    /// A view with a new shape over the same elements, when the strides allow it
    /// (PyTorch's rule: each run of merged dims must be contiguous within itself).
    pub fn view(&self, shape: &[usize]) -> Option<Layout> {
        if numel(shape) != self.numel() {
            return None;
        }
        if self.numel() == 0 || self.is_contiguous() {
            return Some(Layout {
                shape: shape.into(),
                strides: contiguous_strides(shape),
                offset: self.offset,
            });
        }
        let mut new_strides: Strides = smallvec::smallvec![0; shape.len()];
        let mut view_d = shape.len() as isize - 1;
        let mut chunk_base_stride = *self.strides.last().unwrap_or(&1);
        let mut tensor_numel = 1usize;
        let mut view_numel = 1usize;
        for td in (0..self.ndim()).rev() {
            tensor_numel *= self.shape[td];
            // End of a contiguous chunk of the old shape.
            if td == 0
                || (self.shape[td - 1] != 1
                    && self.strides[td - 1] != tensor_numel as isize * chunk_base_stride)
            {
                while view_d >= 0 && (view_numel < tensor_numel || shape[view_d as usize] == 1) {
                    new_strides[view_d as usize] = view_numel as isize * chunk_base_stride;
                    view_numel *= shape[view_d as usize];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if td > 0 {
                    chunk_base_stride = self.strides[td - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return None;
        }
        Some(Layout { shape: shape.into(), strides: new_strides, offset: self.offset })
    }
    /// Merges adjacent dims that can be walked with one stride and drops size-1
    /// dims, for several operands at once; kernels then loop over fewer, longer rows.
    pub fn coalesce<const N: usize>(
        shape: &[usize],
        strides: [&[isize]; N],
    ) -> (Shape, [Strides; N]) {
        let mut out_shape = Shape::new();
        let mut out_strides: [Strides; N] = std::array::from_fn(|_| Strides::new());
        for d in 0..shape.len() {
            if shape[d] == 1 {
                continue;
            }
            if let Some(&last) = out_shape.last() {
                let mergeable = (0..N)
                    .all(|k| *out_strides[k].last().unwrap() == strides[k][d] * shape[d] as isize);
                if mergeable {
                    *out_shape.last_mut().unwrap() = last * shape[d];
                    for k in 0..N {
                        *out_strides[k].last_mut().unwrap() = strides[k][d];
                    }
                    continue;
                }
            }
            out_shape.push(shape[d]);
            for k in 0..N {
                out_strides[k].push(strides[k][d]);
            }
        }
        (out_shape, out_strides)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        assert_eq!(broadcast_shapes(&[3, 1, 4], &[2, 4]).unwrap().as_slice(), &[3, 2, 4]);
        assert_eq!(broadcast_shapes(&[], &[5]).unwrap().as_slice(), &[5]);
        assert_eq!(broadcast_shapes(&[0, 1], &[1, 3]).unwrap().as_slice(), &[0, 3]);
        let e = broadcast_shapes(&[3], &[4]).unwrap_err();
        assert!(e.to_string().contains("size of tensor a (3)"));
    }

    #[test]
    fn views_share_offsets() {
        let l = Layout::contiguous(&[2, 3, 4]);
        assert_eq!(l.strides.as_slice(), &[12, 4, 1]);
        let t = l.transpose(0, 2).unwrap();
        assert_eq!(t.shape.as_slice(), &[4, 3, 2]);
        assert_eq!(t.strides.as_slice(), &[1, 4, 12]);
        assert!(!t.is_contiguous());
        let s = l.slice(2, 1, 4, 2).unwrap();
        assert_eq!((s.shape[2], s.strides[2], s.offset), (2, 2, 1));
        let n = l.narrow(1, -2, 2).unwrap();
        assert_eq!((n.shape[1], n.offset), (2, 4));
        let sel = l.select(0, -1).unwrap();
        assert_eq!((sel.shape.as_slice(), sel.offset), (&[3usize, 4][..], 12));
        assert!(l.select(0, 2).is_err());
        let u = l.unsqueeze(-1).unwrap();
        assert_eq!(u.shape.as_slice(), &[2, 3, 4, 1]);
        assert_eq!(u.squeeze(None).unwrap(), l);
        let e = Layout::contiguous(&[3, 1]).expand(&[2, -1, 5]).unwrap();
        assert_eq!(
            (e.shape.as_slice(), e.strides.as_slice()),
            (&[2usize, 3, 5][..], &[0isize, 1, 0][..])
        );
        assert!(Layout::contiguous(&[3]).expand(&[4]).is_err());
        assert_eq!(wrap_dim(-1, 3).unwrap(), 2);
        assert!(wrap_dim(3, 3).is_err());
        assert_eq!(wrap_dim(-1, 0).unwrap(), 0);
    }

    #[test]
    fn view_rules() {
        let l = Layout::contiguous(&[4, 6]);
        assert_eq!(l.view(&[2, 2, 6]).unwrap().strides.as_slice(), &[12, 6, 1]);
        let t = l.transpose(0, 1).unwrap(); // (6, 4) with strides (1, 6)
        assert!(t.view(&[24]).is_none());
        assert_eq!(t.view(&[6, 2, 2]).unwrap().strides.as_slice(), &[1, 12, 6]);
        let s = l.slice(1, 0, 6, 2).unwrap(); // (4, 3) strides (6, 2)
        assert_eq!(s.view(&[4, 3, 1]).unwrap().strides.as_slice(), &[6, 2, 2]);
        assert_eq!(s.view(&[12]).unwrap().strides.as_slice(), &[2]); // every other element
        assert!(s.transpose(0, 1).unwrap().view(&[12]).is_none());
        assert_eq!(infer_shape(&[-1, 3], 12).unwrap().as_slice(), &[4, 3]);
        assert!(infer_shape(&[-1, 5], 12).is_err());
        assert!(infer_shape(&[-1, -1], 12).is_err());
    }

    #[test]
    fn coalescing() {
        let l = Layout::contiguous(&[2, 3, 4]);
        let (shape, [s]) = Layout::coalesce(&l.shape, [&l.strides]);
        assert_eq!((shape.as_slice(), s.as_slice()), (&[24usize][..], &[1isize][..]));
        let t = l.transpose(1, 2).unwrap();
        let (shape, [s]) = Layout::coalesce(&t.shape, [&t.strides]);
        assert_eq!((shape.as_slice(), s.as_slice()), (&[2usize, 4, 3][..], &[12isize, 1, 4][..]));
        let span = t.span();
        assert_eq!(span, (0, 24));
    }
}
