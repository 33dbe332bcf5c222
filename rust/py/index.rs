//! `t[idx]` and `t[idx] = v`: ints, slices, None, Ellipsis and bools make a view;
//! integer/bool tensors (or lists) are advanced indices gathered by offsets.

use super::convert::{operand_req, tensor_from_data};
use super::gil::run;
use super::tensor::PyTensor;
use crate::autograd::{inplace, is_grad_enabled, needs_grad, record};
use crate::ops::copy::{copy_, to_dtype};
use crate::ops::index::{
    advanced_offsets, mask_to_indices, put, put_offsets, take_offsets, Region, TakeBackward,
};
use crate::ops::Operand;
use crate::tensor::{DType, Layout, Tensor};
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyInt, PyList, PyNone, PySlice, PySliceMethods, PyTuple};

enum Item<'py> {
    Int(i64),
    Slice(Bound<'py, PySlice>),
    NewAxis,
    Ellipsis,
    Bool(bool),
    Index(Tensor),
    Mask(Tensor),
}

impl Item<'_> {
    /// Dims of the indexed tensor this item consumes.
    fn consumes(&self) -> usize {
        match self {
            Item::Int(_) | Item::Slice(_) | Item::Index(_) => 1,
            Item::Mask(m) => m.ndim(),
            _ => 0,
        }
    }
}

fn parse_item<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Item<'py>> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(Item::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return obj.extract().map(Item::Int).map_err(|_| {
            PyIndexError::new_err(format!("index {} is out of range for a 64-bit integer", obj))
        });
    }
    if let Ok(s) = obj.cast::<PySlice>() {
        return Ok(Item::Slice(s.clone()));
    }
    if obj.is_instance_of::<PyNone>() {
        return Ok(Item::NewAxis);
    }
    if obj.is_instance_of::<PyEllipsis>() {
        return Ok(Item::Ellipsis);
    }
    let t = if let Ok(t) = obj.cast::<PyTensor>() {
        t.get().t.clone()
    } else if obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyTuple>()
        || super::numpy::is_ndarray(obj)
    {
        tensor_from_data(py, obj, None)?
    } else if let Ok(i) = obj.call_method0("__index__") {
        return Ok(Item::Int(i.extract()?));
    } else {
        let ty = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return Err(PyIndexError::new_err(format!(
            "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got {})",
            ty
        )));
    };
    match t.dtype() {
        DType::Bool | DType::U8 if t.ndim() == 0 => {
            Ok(Item::Bool(crate::ops::copy::item(&t)?.to_i64() != 0))
        }
        DType::Bool | DType::U8 => Ok(Item::Mask(to_dtype(&t, DType::Bool)?)),
        DType::I64 | DType::I32 => Ok(Item::Index(t)),
        // An empty list parses as float32; it indexes nothing.
        _ if t.numel() == 0 => Ok(Item::Index(to_dtype(&t, DType::I64)?)),
        d => Err(PyIndexError::new_err(format!(
            "tensors used as indices must be long, int, byte or bool tensors, got {}",
            d.name()
        ))),
    }
}

/// The view after basic indexing of `base` (the layout of a tensor `t`, or a
/// contiguous layout of its shape for autograd regions), and the advanced
/// indices (at dims of that view).
fn resolve(
    py: Python<'_>,
    t: &Tensor,
    base: &Layout,
    idx: &Bound<'_, PyAny>,
) -> PyResult<(Layout, Vec<(usize, Tensor)>)> {
    let items: Vec<Item> = match idx.cast::<PyTuple>() {
        Ok(tup) => tup.iter().map(|o| parse_item(py, &o)).collect::<PyResult<_>>()?,
        Err(_) => vec![parse_item(py, idx)?],
    };
    let consumed: usize = items.iter().map(Item::consumes).sum();
    if items.iter().filter(|i| matches!(i, Item::Ellipsis)).count() > 1 {
        return Err(PyIndexError::new_err("an index can only have a single ellipsis ('...')"));
    }
    if consumed > t.ndim() {
        return Err(PyIndexError::new_err(format!(
            "too many indices for tensor of dimension {}",
            t.ndim()
        )));
    }
    let mut l = base.clone();
    let mut adv = Vec::new();
    let mut d = 0usize;
    for item in items {
        match item {
            Item::Int(i) => {
                let size = l.shape[d] as i64;
                if i < -size || i >= size {
                    return Err(PyIndexError::new_err(format!(
                        "index {} is out of bounds for dimension {} with size {}",
                        i, d, size
                    )));
                }
                l = l.select(d, i)?;
            }
            Item::Slice(s) => {
                let ind = s.indices(l.shape[d] as isize)?;
                if ind.step <= 0 {
                    return Err(PyValueError::new_err("step must be greater than zero"));
                }
                let (start, stop) = (ind.start.max(0) as usize, ind.stop.max(0) as usize);
                l = l.slice(d, start, stop.max(start), ind.step as usize)?;
                d += 1;
            }
            Item::NewAxis => {
                l = l.unsqueeze(d as i64)?;
                d += 1;
            }
            Item::Bool(b) => {
                l = l.unsqueeze(d as i64)?;
                if !b {
                    l = l.slice(d, 0, 0, 1)?;
                }
                d += 1;
            }
            // The ellipsis stands for every original dim no item consumes.
            Item::Ellipsis => d += t.ndim() - consumed,
            Item::Index(i) => {
                adv.push((d, i));
                d += 1;
            }
            Item::Mask(m) => {
                let n = m.ndim();
                adv.extend(mask_to_indices(&l, d, &m)?);
                d += n;
            }
        }
    }
    Ok((l, adv))
}

pub fn getitem(py: Python<'_>, t: &Tensor, idx: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let (l, adv) = resolve(py, t, t.layout(), idx)?;
    let recording = needs_grad(&[t]);
    // Autograd regions are relative to a contiguous layout of t's shape.
    let rel =
        if recording { Some(resolve(py, t, &Layout::contiguous(t.shape()), idx)?.0) } else { None };
    if adv.is_empty() {
        let out = t.with_layout(l);
        return Ok(record(
            &[t],
            || Ok(out),
            |_| {
                Ok(TakeBackward::new("SliceBackward0", t, Region::View(rel.expect("recording")))
                    .into())
            },
        )?);
    }
    let work = adv.iter().map(|(_, i)| i.numel()).max().unwrap_or(0).max(l.numel());
    let out = run(py, work, || {
        let (shape, offs) = advanced_offsets(&l, &adv)?;
        take_offsets(t, &shape, &offs)
    })?;
    Ok(record(
        &[t],
        || Ok(out),
        |_| {
            let (shape, offs) = advanced_offsets(&rel.expect("recording"), &adv)?;
            Ok(TakeBackward::new(
                "IndexBackward0",
                t,
                Region::Offsets { shape, offs: std::sync::Arc::new(offs) },
            )
            .into())
        },
    )?)
}

pub fn setitem(
    py: Python<'_>,
    t: &Tensor,
    idx: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let v = if value.is_instance_of::<PyList>()
        || value.is_instance_of::<PyTuple>()
        || super::numpy::is_ndarray(value)
    {
        tensor_from_data(py, value, Some(t.dtype()))?
    } else if value.is_instance_of::<pyo3::types::PyComplex>() && !t.dtype().is_complex() {
        // PyTorch's error: the imaginary part would be lost.
        return Err(PyRuntimeError::new_err(format!(
            "value cannot be converted to type {} without overflow",
            t.dtype().name()
        )));
    } else {
        match operand_req(value, "__setitem__")
            .map_err(|_| PyTypeError::new_err("can't assign a value of this type to a Tensor"))?
        {
            Operand::T(v) => v,
            Operand::S(s) => crate::ops::creation::scalar_tensor(s, t.dtype())?,
        }
    };
    let (l, adv) = resolve(py, t, t.layout(), idx)?;
    let raw = || -> crate::error::Result<()> {
        if adv.is_empty() {
            return copy_(&t.with_layout(l.clone()), &v);
        }
        let (shape, offs) = advanced_offsets(&l, &adv)?;
        put_offsets(t, &shape, &offs, &v, false)
    };
    let work = l.numel().max(v.numel());
    if !(is_grad_enabled() && (t.requires_grad() || v.requires_grad())) {
        return Ok(run(py, work, raw)?);
    }
    // With autograd, t[idx] = v is an op on all of t: t becomes put(t, region, v).
    let (rl, radv) = resolve(py, t, &Layout::contiguous(t.shape()), idx)?;
    let region = if radv.is_empty() {
        Region::View(rl)
    } else {
        let (shape, offs) = advanced_offsets(&rl, &radv)?;
        Region::Offsets { shape, offs: std::sync::Arc::new(offs) }
    };
    Ok(run(py, work, || inplace(t, &[&v], "__setitem__", raw, |x| put(x, &region, &v, false)))?)
}
