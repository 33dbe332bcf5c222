//! einsum: the equation is lowered to views (diagonals, permutes, reshapes),
//! sums over labels no later term needs, and one batched matmul (or a
//! broadcast product) per pair of operands, left to right. Autograd and the
//! GPU come from those ops; nothing loops over elements.

use super::copy::to_dtype;
use super::elementwise::{binary, Binary};
use super::linalg::bmm;
use super::reduce::sum;
use super::shape::{diagonal, expand, permute, reshape};
use super::{result_type, same_device, Operand};
use crate::bail;
use crate::error::Result;
use crate::tensor::{DType, Tensor};

/// Labels: a-z and A-Z as 0..52; the dims an ellipsis stands for as 52.., the
/// last of them aligned across operands (broadcasting from the right).
type Label = usize;
const ELLIPSIS: Label = 52;

/// One term of the equation: its labels, and where its ellipsis sits.
struct Term {
    labels: Vec<Label>,
    ellipsis: Option<usize>,
}

fn label(c: char, at: usize) -> Result<Label> {
    match c {
        'a'..='z' => Ok(c as usize - 'a' as usize),
        'A'..='Z' => Ok(c as usize - 'A' as usize + 26),
        _ => bail!(
            Runtime,
            "einsum(): invalid subscript given at index {} in the equation string, subscripts must be in [a-zA-Z]",
            at
        ),
    }
}

/// Parses a term starting at character `start` of the equation.
fn term(s: &str, start: usize) -> Result<Term> {
    let mut t = Term { labels: Vec::new(), ellipsis: None };
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '.' {
            let dots = s[i..].starts_with("...");
            if !dots || t.ellipsis.is_some() {
                bail!(
                    Runtime,
                    "einsum(): found '.' for operand at index {} that is not part of any ellipsis, or more than one ellipsis",
                    start + i
                );
            }
            t.ellipsis = Some(t.labels.len());
            chars.next();
            chars.next();
        } else {
            t.labels.push(label(c, start + i)?);
        }
    }
    Ok(t)
}

fn name(l: Label) -> String {
    match l {
        0..=25 => ((b'a' + l as u8) as char).to_string(),
        26..=51 => ((b'A' + (l - 26) as u8) as char).to_string(),
        _ => "...".to_string(),
    }
}

/// A partial result: a tensor whose dims carry distinct labels.
struct Part {
    t: Tensor,
    labels: Vec<Label>,
}

impl Part {
    /// Sums away the dims whose labels `keep` rejects.
    fn reduce(self, keep: impl Fn(Label) -> bool) -> Result<Part> {
        let gone: Vec<i64> =
            (0..self.labels.len()).filter(|&d| !keep(self.labels[d])).map(|d| d as i64).collect();
        if gone.is_empty() {
            return Ok(self);
        }
        let labels = self.labels.iter().copied().filter(|&l| keep(l)).collect();
        let t = sum(&self.t, Some(&gone), false, Some(self.t.dtype()))?;
        Ok(Part { t, labels })
    }

    fn get(&self, l: Label) -> Option<usize> {
        self.labels.iter().position(|&x| x == l).map(|d| self.t.shape()[d])
    }

    fn size(&self, l: Label) -> usize {
        self.get(l).unwrap_or(1)
    }

    /// The tensor with its dims in the order of `order` (labels it lacks
    /// become size-1 dims), expanded to `sizes`.
    fn arrange(&self, order: &[Label], sizes: &[usize]) -> Result<Tensor> {
        let perm: Vec<i64> = order
            .iter()
            .filter_map(|l| self.labels.iter().position(|x| x == l).map(|d| d as i64))
            .collect();
        let t = permute(&self.t, &perm)?;
        let shape: Vec<i64> = order.iter().map(|&l| self.size(l) as i64).collect();
        let t = reshape(&t, &shape)?;
        let sizes: Vec<i64> = sizes.iter().map(|&n| n as i64).collect();
        if t.shape().iter().zip(&sizes).all(|(&a, &b)| a as i64 == b) {
            Ok(t)
        } else {
            expand(&t, &sizes)
        }
    }
}

/// a and b contracted over their shared labels that `keep` rejects; labels
/// of one side only that `keep` rejects are summed first.
fn contract(a: Part, b: Part, keep: &dyn Fn(Label) -> bool) -> Result<Part> {
    let a = a.reduce(|l| keep(l) || b.labels.contains(&l))?;
    let b = b.reduce(|l| keep(l) || a.labels.contains(&l))?;
    let shared = |l: &Label| b.labels.contains(l);
    let batch: Vec<Label> = a.labels.iter().copied().filter(|l| shared(l) && keep(*l)).collect();
    let summed: Vec<Label> = a.labels.iter().copied().filter(|l| shared(l) && !keep(*l)).collect();
    let a_only: Vec<Label> = a.labels.iter().copied().filter(|l| !shared(l)).collect();
    let b_only: Vec<Label> = b.labels.iter().copied().filter(|l| !a.labels.contains(l)).collect();
    // A size-1 dim broadcasts against the other operand's (which may be 0).
    let size = |l: &Label| match (a.get(*l), b.get(*l)) {
        (Some(1), Some(n)) | (Some(n), _) | (None, Some(n)) => n,
        (None, None) => 1,
    };
    let [nb, m, n, k] =
        [&batch, &a_only, &b_only, &summed].map(|ls| ls.iter().map(size).product::<usize>());
    let labels: Vec<Label> = [&batch[..], &a_only, &b_only].concat();
    let out_shape: Vec<i64> = labels.iter().map(|l| size(l) as i64).collect();
    if summed.is_empty() || (m == 1 && n == 1) {
        // A broadcast product (then a sum over `summed`): no GEMM for outer
        // products, elementwise products or batched dots.
        let order: Vec<Label> = [&labels[..], &summed].concat();
        let sizes: Vec<usize> = order.iter().map(size).collect();
        let prod = binary(
            Binary::Mul,
            &Operand::T(a.arrange(&order, &sizes)?),
            &Operand::T(b.arrange(&order, &sizes)?),
            None,
        )?;
        let t = if summed.is_empty() {
            prod
        } else {
            let dims: Vec<i64> = (labels.len()..order.len()).map(|d| d as i64).collect();
            sum(&prod, Some(&dims), false, Some(prod.dtype()))?
        };
        return Ok(Part { t, labels });
    }
    let a_order: Vec<Label> = [&batch[..], &a_only, &summed].concat();
    let b_order: Vec<Label> = [&batch[..], &summed, &b_only].concat();
    let sizes = |o: &[Label]| o.iter().map(size).collect::<Vec<_>>();
    let at = reshape(&a.arrange(&a_order, &sizes(&a_order))?, &[nb as i64, m as i64, k as i64])?;
    let bt = reshape(&b.arrange(&b_order, &sizes(&b_order))?, &[nb as i64, k as i64, n as i64])?;
    Ok(Part { t: reshape(&bmm(&at, &bt)?, &out_shape)?, labels })
}

/// torch.einsum(equation, *operands).
pub fn einsum(equation: &str, operands: &[Tensor]) -> Result<Tensor> {
    let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (&eq[..], None),
    };
    let mut terms = Vec::new();
    let mut at = 0;
    for s in lhs.split(',') {
        terms.push(term(s, at)?);
        at += s.len() + 1;
    }
    if operands.is_empty() {
        bail!(Runtime, "einsum(): must provide at least one operand");
    }
    if terms.len() != operands.len() {
        bail!(
            Runtime,
            "einsum(): {} operands were provided but the equation '{}' specifies {}",
            operands.len(),
            equation,
            terms.len()
        );
    }
    let refs: Vec<&Tensor> = operands.iter().collect();
    same_device("einsum", &refs)?;
    // Operands of mixed dtypes are promoted (PyTorch refuses them).
    let ops: Vec<Operand> = operands.iter().map(|t| Operand::T(t.clone())).collect();
    let dtype = result_type(&ops.iter().collect::<Vec<_>>());
    if dtype == DType::Bool {
        bail!(Type, "einsum(): bool operands are not supported");
    }
    let operands = operands.iter().map(|t| to_dtype(t, dtype)).collect::<Result<Vec<Tensor>>>()?;
    // Dims per ellipsis, then every operand's dims as labels.
    let mut ell = 0;
    for (i, (t, x)) in terms.iter().zip(&operands).enumerate() {
        let n = t.labels.len();
        if t.ellipsis.is_none() && n != x.ndim() || n > x.ndim() {
            bail!(
                Runtime,
                "einsum(): the number of subscripts in the equation ({}) does not match the number of dimensions ({}) for operand {}{}",
                n,
                x.ndim(),
                i,
                if t.ellipsis.is_none() { " and no ellipsis was given" } else { "" }
            );
        }
        ell = ell.max(x.ndim() - n);
    }
    let mut parts = Vec::new();
    for (t, x) in terms.iter().zip(&operands) {
        let mut labels = t.labels.clone();
        if let Some(p) = t.ellipsis {
            let e = x.ndim() - t.labels.len();
            labels.splice(p..p, (ell - e..ell).map(|j| ELLIPSIS + j));
        }
        parts.push(diagonals(x, labels, parts.len())?);
    }
    // Sizes must agree, up to broadcasting of size-1 dims.
    let mut sizes = std::collections::BTreeMap::new();
    for (i, p) in parts.iter().enumerate() {
        for (&l, &n) in p.labels.iter().zip(p.t.shape()) {
            let s = sizes.entry(l).or_insert(n);
            if *s != n && *s != 1 && n != 1 {
                bail!(
                    Runtime,
                    "einsum(): operands do not broadcast: subscript {} has size {} for operand {} which does not broadcast with previously seen size {}",
                    name(l),
                    n,
                    i,
                    s
                );
            }
            if *s == 1 {
                *s = n;
            }
        }
    }
    let out = output(rhs, &terms, ell)?;
    // Fold left to right; a label stays while the output or a later term has it.
    let mut rest = parts.into_iter();
    let mut acc = rest.next().expect("one operand at least");
    let mut later: Vec<Vec<Label>> = Vec::new();
    let remaining: Vec<Part> = rest.collect();
    for i in 0..remaining.len() {
        later.push(remaining[i + 1..].iter().flat_map(|p| p.labels.clone()).collect());
    }
    for (p, later) in remaining.into_iter().zip(later) {
        acc = contract(acc, p, &|l| out.contains(&l) || later.contains(&l))?;
    }
    let acc = acc.reduce(|l| out.contains(&l))?;
    let out_sizes: Vec<usize> = out.iter().map(|l| acc.size(*l)).collect();
    acc.arrange(&out, &out_sizes)
}

/// Operand `i` with repeated labels turned into diagonals, so that its dims
/// carry distinct labels.
fn diagonals(x: &Tensor, mut labels: Vec<Label>, i: usize) -> Result<Part> {
    let mut t = x.clone();
    while let Some((d1, d2)) = (0..labels.len()).find_map(|d1| {
        (d1 + 1..labels.len()).find(|&d2| labels[d2] == labels[d1]).map(|d2| (d1, d2))
    }) {
        let (n1, n2) = (t.shape()[d1], t.shape()[d2]);
        if n1 != n2 {
            bail!(
                Runtime,
                "einsum(): subscript {} is repeated for operand {} but the sizes don't match, {} != {}",
                name(labels[d1]),
                i,
                n1,
                n2
            );
        }
        // The diagonal becomes the last dim: move its label there.
        t = diagonal(&t, 0, d1 as i64, d2 as i64)?;
        let l = labels[d1];
        labels.remove(d2);
        labels.remove(d1);
        labels.push(l);
    }
    Ok(Part { t, labels })
}

/// The output's labels: as written after "->", else the ellipsis dims then
/// the labels that appear once, in alphabetical order (upper case first).
fn output(rhs: Option<&str>, terms: &[Term], ell: usize) -> Result<Vec<Label>> {
    let ellipsis = (0..ell).map(|j| ELLIPSIS + j);
    let Some(rhs) = rhs else {
        let mut count = [0usize; ELLIPSIS];
        terms.iter().flat_map(|t| &t.labels).for_each(|&l| count[l] += 1);
        let mut once: Vec<Label> = (0..ELLIPSIS).filter(|&l| count[l] == 1).collect();
        once.sort_by_key(|&l| if l >= 26 { l - 26 } else { l + 26 });
        return Ok(ellipsis.chain(once).collect());
    };
    let t = term(rhs, 0)?;
    for (i, &l) in t.labels.iter().enumerate() {
        if !terms.iter().any(|x| x.labels.contains(&l)) {
            bail!(Runtime, "einsum(): output subscript {} does not appear in the equation for any input operand", name(l));
        }
        if t.labels[..i].contains(&l) {
            bail!(
                Runtime,
                "einsum(): output subscript {} appears more than once in the output",
                name(l)
            );
        }
    }
    let mut labels = t.labels;
    if let Some(p) = t.ellipsis {
        labels.splice(p..p, ellipsis);
    }
    Ok(labels)
}
