//! Bindings of the nn ops (rumus.nn.functional's Rust-backed functions), with
//! PyTorch's signatures.

use super::convert::int_list;
use super::gil::run;
use super::tensor::{wrap, PyTensor};
use crate::ops::conv::{self, ConvOpts, Padding};
use crate::ops::pool::{self, Kind, PoolOpts};
use crate::tensor::Tensor;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// An int or a tuple of `n` ints (or of 1), each >= `min`.
fn ints(obj: &Bound<'_, PyAny>, n: usize, op: &str, what: &str, min: i64) -> PyResult<Vec<usize>> {
    let v = int_list(obj, what)?;
    if v.len() != 1 && v.len() != n {
        return Err(PyRuntimeError::new_err(format!("{}: expected {} to be a single integer value or a list of {} values to match the convolution dimensions, but got {}={:?}", op, what, n, what, v)));
    }
    if let Some(bad) = v.iter().find(|&&x| x < min) {
        let kind = if min == 0 { "negative" } else { "non-positive" };
        return Err(PyRuntimeError::new_err(format!(
            "{}: {} {} is not supported (got {})",
            op, kind, what, bad
        )));
    }
    Ok(v.iter().map(|&x| x as usize).collect())
}

fn padding(obj: &Bound<'_, PyAny>, n: usize, op: &str) -> PyResult<Padding> {
    if let Ok(s) = obj.extract::<String>() {
        return match s.as_str() {
            "same" => Ok(Padding::Same),
            "valid" => Ok(Padding::Valid),
            _ => Err(PyRuntimeError::new_err(format!("Invalid padding string: '{}'", s))),
        };
    }
    Ok(Padding::Explicit(ints(obj, n, op, "padding", 0)?))
}

fn opts(
    n: usize,
    op: &str,
    stride: &Bound<'_, PyAny>,
    pad: &Bound<'_, PyAny>,
    dilation: &Bound<'_, PyAny>,
    groups: i64,
    output_padding: Option<&Bound<'_, PyAny>>,
) -> PyResult<ConvOpts> {
    if groups <= 0 {
        return Err(PyRuntimeError::new_err(format!(
            "{}: non-positive groups is not supported (got {})",
            op, groups
        )));
    }
    Ok(ConvOpts {
        stride: ints(stride, n, op, "stride", 1)?,
        padding: padding(pad, n, op)?,
        dilation: ints(dilation, n, op, "dilation", 1)?,
        groups: groups as usize,
        output_padding: match output_padding {
            Some(o) => ints(o, n, op, "output_padding", 0)?,
            None => vec![0],
        },
    })
}

macro_rules! conv_fn {
    ($(#[$doc:meta])* $name:ident, $dims:expr) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (input, weight, bias=None, stride=None, padding=None, dilation=None, groups=1))]
        fn $name(
            py: Python<'_>,
            input: PyRef<'_, PyTensor>,
            weight: PyRef<'_, PyTensor>,
            bias: Option<PyRef<'_, PyTensor>>,
            stride: Option<&Bound<'_, PyAny>>,
            padding: Option<&Bound<'_, PyAny>>,
            dilation: Option<&Bound<'_, PyAny>>,
            groups: i64,
        ) -> PyResult<PyTensor> {
            let one = 1i64.into_pyobject(py)?.into_any();
            let zero = 0i64.into_pyobject(py)?.into_any();
            let o = opts($dims, stringify!($name), stride.unwrap_or(&one), padding.unwrap_or(&zero), dilation.unwrap_or(&one), groups, None)?;
            let (x, w, b) = (input.t.clone(), weight.t.clone(), bias.map(|b| b.t.clone()));
            let work = x.numel().saturating_mul(w.numel());
            Ok(wrap(run(py, work, || conv::conv($dims, &x, &w, b.as_ref(), &o))?))
        }
    };
}
conv_fn!(
    /// 1-d convolution (cross-correlation) over ``(N, C_in, L)`` input.
    ///
    /// Args:
    ///   input (Tensor): of shape ``(N, C_in, L)`` or ``(C_in, L)``.
    ///   weight (Tensor): of shape ``(C_out, C_in / groups, k)``.
    ///   bias (Tensor, optional): the bias.
    ///   stride (int or tuple, optional): the step of the window (``kernel_size`` by default for
    ///     pooling, 1 for convolution).
    ///   padding (int, tuple or str, optional): zero padding, or ``'valid'`` / ``'same'``.
    ///   dilation (int or tuple, optional): the spacing between window elements (1 by default).
    ///   groups (int): the number of blocked connections from input to output channels.
    ///
    /// Returns:
    ///   Tensor: of shape ``(N, C_out, L_out)``.
    conv1d,
    1
);
conv_fn!(
    /// 2-d convolution (cross-correlation) over ``(N, C_in, H, W)`` input.
    ///
    /// Args:
    ///   input (Tensor): of shape ``(N, C_in, H, W)`` or ``(C_in, H, W)``.
    ///   weight (Tensor): of shape ``(C_out, C_in / groups, kH, kW)``.
    ///   bias (Tensor, optional): the bias.
    ///   stride (int or tuple, optional): the step of the window (``kernel_size`` by default for
    ///     pooling, 1 for convolution).
    ///   padding (int, tuple or str, optional): zero padding, or ``'valid'`` / ``'same'``.
    ///   dilation (int or tuple, optional): the spacing between window elements (1 by default).
    ///   groups (int): the number of blocked connections from input to output channels.
    ///
    /// Returns:
    ///   Tensor: of shape ``(N, C_out, H_out, W_out)``.
    conv2d,
    2
);
conv_fn!(
    /// 3-d convolution (cross-correlation) over ``(N, C_in, D, H, W)`` input.
    ///
    /// Args:
    ///   input (Tensor): of shape ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)``.
    ///   weight (Tensor): of shape ``(C_out, C_in / groups, kD, kH, kW)``.
    ///   bias (Tensor, optional): the bias.
    ///   stride (int or tuple, optional): the step of the window (1 by default).
    ///   padding (int, tuple or str, optional): zero padding, or ``'valid'`` / ``'same'``.
    ///   dilation (int or tuple, optional): the spacing between window elements (1 by default).
    ///   groups (int): the number of blocked connections from input to output channels.
    ///
    /// Returns:
    ///   Tensor: of shape ``(N, C_out, D_out, H_out, W_out)``.
    conv3d,
    3
);

macro_rules! conv_t_fn {
    ($(#[$doc:meta])* $name:ident, $dims:expr) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (input, weight, bias=None, stride=None, padding=None, output_padding=None, groups=1, dilation=None))]
        #[allow(clippy::too_many_arguments)]
        fn $name(
            py: Python<'_>,
            input: PyRef<'_, PyTensor>,
            weight: PyRef<'_, PyTensor>,
            bias: Option<PyRef<'_, PyTensor>>,
            stride: Option<&Bound<'_, PyAny>>,
            padding: Option<&Bound<'_, PyAny>>,
            output_padding: Option<&Bound<'_, PyAny>>,
            groups: i64,
            dilation: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyTensor> {
            let one = 1i64.into_pyobject(py)?.into_any();
            let zero = 0i64.into_pyobject(py)?.into_any();
            let o = opts($dims, stringify!($name), stride.unwrap_or(&one), padding.unwrap_or(&zero), dilation.unwrap_or(&one), groups, Some(output_padding.unwrap_or(&zero)))?;
            let (x, w, b) = (input.t.clone(), weight.t.clone(), bias.map(|b| b.t.clone()));
            let work = x.numel().saturating_mul(w.numel());
            Ok(wrap(run(py, work, || conv::conv_transpose($dims, &x, &w, b.as_ref(), &o))?))
        }
    };
}
conv_t_fn!(
    /// 1-d transposed convolution (the gradient of conv1d) over ``(N, C_in, L)`` input.
    ///
    /// Args:
    ///   input (Tensor): the input.
    ///   weight (Tensor): of shape ``(C_in, C_out / groups, k)``.
    ///   bias (Tensor, optional): the bias.
    ///   stride (int or tuple, optional): the step of the window (``kernel_size`` by default for
    ///     pooling, 1 for convolution).
    ///   padding (int or tuple, optional): implicit zero padding on both sides (0 by default).
    ///   output_padding (int or tuple, optional): extra size added to one side of the output.
    ///   groups (int): the number of blocked connections from input to output channels.
    ///   dilation (int or tuple, optional): the spacing between window elements (1 by default).
    ///
    /// Returns:
    ///   Tensor: of shape ``(N, C_out, L_out)``.
    conv_transpose1d,
    1
);
conv_t_fn!(
    /// 2-d transposed convolution (the gradient of conv2d) over ``(N, C_in, H, W)`` input.
    ///
    /// Args:
    ///   input (Tensor): the input.
    ///   weight (Tensor): of shape ``(C_in, C_out / groups, kH, kW)``.
    ///   bias (Tensor, optional): the bias.
    ///   stride (int or tuple, optional): the step of the window (``kernel_size`` by default for
    ///     pooling, 1 for convolution).
    ///   padding (int or tuple, optional): implicit zero padding on both sides (0 by default).
    ///   output_padding (int or tuple, optional): extra size added to one side of the output.
    ///   groups (int): the number of blocked connections from input to output channels.
    ///   dilation (int or tuple, optional): the spacing between window elements (1 by default).
    ///
    /// Returns:
    ///   Tensor: of shape ``(N, C_out, H_out, W_out)``.
    conv_transpose2d,
    2
);
conv_t_fn!(
    /// 3-d transposed convolution (the gradient of conv3d) over ``(N, C_in, D, H, W)`` input.
    ///
    /// Args:
    ///   input (Tensor): the input.
    ///   weight (Tensor): of shape ``(C_in, C_out / groups, kD, kH, kW)``.
    ///   bias (Tensor, optional): the bias.
    ///   stride (int or tuple, optional): the step of the window (1 by default).
    ///   padding (int or tuple, optional): implicit zero padding on both sides (0 by default).
    ///   output_padding (int or tuple, optional): extra size added to one side of the output.
    ///   groups (int): the number of blocked connections from input to output channels.
    ///   dilation (int or tuple, optional): the spacing between window elements (1 by default).
    ///
    /// Returns:
    ///   Tensor: of shape ``(N, C_out, D_out, H_out, W_out)``.
    conv_transpose3d,
    3
);

/// Extracts sliding local blocks (im2col) from ``(N, C, H, W)`` input.
///
/// Args:
///   input (Tensor): the input.
///   kernel_size (int or tuple): the size of the window.
///   dilation (int or tuple, optional): the spacing between window elements (1 by default).
///   padding (int or tuple, optional): implicit zero padding on both sides (0 by default).
///   stride (int or tuple, optional): the step of the window (``kernel_size`` by default for
///     pooling, 1 for convolution).
///
/// Returns:
///   Tensor: of shape ``(N, C * kH * kW, L)``.
#[pyfunction]
#[pyo3(signature = (input, kernel_size, dilation=None, padding=None, stride=None))]
fn unfold(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: &Bound<'_, PyAny>,
    dilation: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    stride: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let (k, d, p, s) = window_args(py, "unfold", kernel_size, dilation, padding, stride)?;
    let x = input.t.clone();
    Ok(wrap(run(py, x.numel(), || conv::unfold(&x, &k, &d, &p, &s))?))
}

/// Combines sliding local blocks (col2im) into ``(N, C, H, W)``, summing overlaps.
///
/// Args:
///   input (Tensor): of shape ``(N, C * kH * kW, L)``.
///   output_size (int or tuple): the spatial size ``(H, W)`` of the output.
///   kernel_size (int or tuple): the size of the window.
///   dilation (int or tuple, optional): the spacing between window elements (1 by default).
///   padding (int or tuple, optional): implicit zero padding on both sides (0 by default).
///   stride (int or tuple, optional): the step of the window (``kernel_size`` by default for
///     pooling, 1 for convolution).
///
/// Returns:
///   Tensor: of shape ``(N, C, H, W)``.
#[pyfunction]
#[pyo3(signature = (input, output_size, kernel_size, dilation=None, padding=None, stride=None))]
fn fold(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: &Bound<'_, PyAny>,
    kernel_size: &Bound<'_, PyAny>,
    dilation: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    stride: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let (k, d, p, s) = window_args(py, "fold", kernel_size, dilation, padding, stride)?;
    let out = ints(output_size, 2, "fold", "output_size", 1)?;
    let x = input.t.clone();
    Ok(wrap(run(py, x.numel(), || conv::fold(&x, &out, &k, &d, &p, &s))?))
}

type Window = (Vec<usize>, Vec<usize>, Vec<usize>, Vec<usize>);

fn window_args(
    py: Python<'_>,
    op: &str,
    k: &Bound<'_, PyAny>,
    d: Option<&Bound<'_, PyAny>>,
    p: Option<&Bound<'_, PyAny>>,
    s: Option<&Bound<'_, PyAny>>,
) -> PyResult<Window> {
    let one = 1i64.into_pyobject(py)?.into_any();
    let zero = 0i64.into_pyobject(py)?.into_any();
    Ok((
        ints(k, 2, op, "kernel_size", 1)?,
        ints(d.unwrap_or(&one), 2, op, "dilation", 1)?,
        ints(p.unwrap_or(&zero), 2, op, "padding", 0)?,
        ints(s.unwrap_or(&one), 2, op, "stride", 1)?,
    ))
}

/// PoolOpts from int-or-tuple arguments; `stride` None (or empty) means the kernel size.
fn pool_opts(
    py: Python<'_>,
    dims: usize,
    op: &str,
    k: &Bound<'_, PyAny>,
    s: Option<&Bound<'_, PyAny>>,
    p: &Bound<'_, PyAny>,
    d: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
) -> PyResult<PoolOpts> {
    let one = 1i64.into_pyobject(py)?.into_any();
    let pair = |v: Vec<usize>, fill: usize| -> [usize; 2] {
        match (dims, v.len()) {
            (1, _) => [fill, v[0]],
            (_, 1) => [v[0], v[0]],
            _ => [v[0], v[1]],
        }
    };
    let kernel = ints(k, dims, op, "kernel_size", 1)?;
    let stride = match s {
        Some(s) if !s.is_none() && !int_list(s, "stride")?.is_empty() => {
            ints(s, dims, op, "stride", 1)?
        }
        _ => kernel.clone(),
    };
    Ok(PoolOpts {
        kernel: pair(kernel, 1),
        stride: pair(stride, 1),
        padding: pair(ints(p, dims, op, "padding", 0)?, 0),
        dilation: pair(ints(d.unwrap_or(&one), dims, op, "dilation", 1)?, 1),
        ceil_mode,
    })
}

fn values_or_pair(
    py: Python<'_>,
    (v, i): (Tensor, Tensor),
    return_indices: bool,
) -> PyResult<Py<PyAny>> {
    if return_indices {
        Ok((wrap(v), wrap(i)).into_pyobject(py)?.into_any().unbind())
    } else {
        Ok(Bound::new(py, wrap(v))?.into_any().unbind())
    }
}

macro_rules! max_pool_fn {
    ($(#[$doc:meta])* $name:ident, $dims:expr) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (input, kernel_size, stride=None, padding=None, dilation=None, ceil_mode=false, return_indices=false))]
        #[allow(clippy::too_many_arguments)]
        fn $name(
            py: Python<'_>,
            input: PyRef<'_, PyTensor>,
            kernel_size: &Bound<'_, PyAny>,
            stride: Option<&Bound<'_, PyAny>>,
            padding: Option<&Bound<'_, PyAny>>,
            dilation: Option<&Bound<'_, PyAny>>,
            ceil_mode: bool,
            return_indices: bool,
        ) -> PyResult<Py<PyAny>> {
            let zero = 0i64.into_pyobject(py)?.into_any();
            let o = pool_opts(py, $dims, stringify!($name), kernel_size, stride, padding.unwrap_or(&zero), dilation, ceil_mode)?;
            let x = input.t.clone();
            let r = run(py, x.numel(), || pool::max_pool(stringify!($name), $dims, &x, &Kind::Sliding(&o)))?;
            values_or_pair(py, r, return_indices)
        }
    };
}
max_pool_fn!(
    /// 1-d max pooling over ``(N, C, L)`` input.
    ///
    /// Args:
    ///   input (Tensor): the input.
    ///   kernel_size (int or tuple): the size of the window.
    ///   stride (int or tuple, optional): the step of the window (``kernel_size`` by default for
    ///     pooling, 1 for convolution).
    ///   padding (int or tuple, optional): implicit zero padding on both sides (0 by default).
    ///   dilation (int or tuple, optional): the spacing between window elements (1 by default).
    ///   ceil_mode (bool): round the output size up instead of down.
    ///   return_indices (bool): also return the flat indices of the maxima.
    ///
    /// Returns:
    ///   Tensor or tuple[Tensor, Tensor]: the maxima (and their indices).
    max_pool1d,
    1
);
max_pool_fn!(
    /// 2-d max pooling over ``(N, C, H, W)`` input.
    ///
    /// Args:
    ///   input (Tensor): the input.
    ///   kernel_size (int or tuple): the size of the window.
    ///   stride (int or tuple, optional): the step of the window (``kernel_size`` by default for
    ///     pooling, 1 for convolution).
    ///   padding (int or tuple, optional): implicit zero padding on both sides (0 by default).
    ///   dilation (int or tuple, optional): the spacing between window elements (1 by default).
    ///   ceil_mode (bool): round the output size up instead of down.
    ///   return_indices (bool): also return the flat indices of the maxima.
    ///
    /// Returns:
    ///   Tensor or tuple[Tensor, Tensor]: the maxima (and their indices).
    max_pool2d,
    2
);

/// 2-d average pooling over ``(N, C, H, W)`` input.
///
/// Args:
///   input (Tensor): the input.
///   kernel_size (int or tuple): the size of the window.
///   stride (int or tuple, optional): the step of the window (``kernel_size`` by default for
///     pooling, 1 for convolution).
///   padding (int or tuple, optional): implicit zero padding on both sides (0 by default).
///   ceil_mode (bool): round the output size up instead of down.
///   count_include_pad (bool): include the zero padding in the averages.
///   divisor_override (int, optional): divide by this instead of the window size.
///
/// Returns:
///   Tensor: the averages.
#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride=None, padding=None, ceil_mode=false, count_include_pad=true, divisor_override=None))]
#[allow(clippy::too_many_arguments)]
fn avg_pool2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> PyResult<PyTensor> {
    if divisor_override == Some(0) {
        return Err(PyRuntimeError::new_err("avg_pool2d: divisor must be not zero"));
    }
    let zero = 0i64.into_pyobject(py)?.into_any();
    let o = pool_opts(
        py,
        2,
        "avg_pool2d",
        kernel_size,
        stride,
        padding.unwrap_or(&zero),
        None,
        ceil_mode,
    )?;
    let x = input.t.clone();
    Ok(wrap(run(py, x.numel(), || {
        pool::avg_pool(
            "avg_pool2d",
            2,
            &x,
            &Kind::Sliding(&o),
            count_include_pad,
            divisor_override.map(|d| d as f64),
        )
    })?))
}

/// 1-d average pooling over ``(N, C, L)`` input.
///
/// Args:
///   input (Tensor): the input.
///   kernel_size (int or tuple): the size of the window.
///   stride (int or tuple, optional): the step of the window (``kernel_size`` by default for
///     pooling, 1 for convolution).
///   padding (int or tuple, optional): implicit zero padding on both sides (0 by default).
///   ceil_mode (bool): round the output size up instead of down.
///   count_include_pad (bool): include the zero padding in the averages.
///
/// Returns:
///   Tensor: the averages.
#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride=None, padding=None, ceil_mode=false, count_include_pad=true))]
fn avg_pool1d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
    count_include_pad: bool,
) -> PyResult<PyTensor> {
    let zero = 0i64.into_pyobject(py)?.into_any();
    let o = pool_opts(
        py,
        1,
        "avg_pool1d",
        kernel_size,
        stride,
        padding.unwrap_or(&zero),
        None,
        ceil_mode,
    )?;
    let x = input.t.clone();
    Ok(wrap(run(py, x.numel(), || {
        pool::avg_pool("avg_pool1d", 1, &x, &Kind::Sliding(&o), count_include_pad, None)
    })?))
}

/// `output_size`: an int or a tuple whose entries may be None (keep the input's size).
fn output_size(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Option<i64>>> {
    if obj.is_instance_of::<pyo3::types::PyTuple>() || obj.is_instance_of::<pyo3::types::PyList>() {
        obj.try_iter()?.map(|v| v?.extract::<Option<i64>>()).collect()
    } else {
        Ok(vec![Some(obj.extract::<i64>()?)])
    }
}

macro_rules! adaptive_avg_fn {
    ($(#[$doc:meta])* $name:ident, $dims:expr) => {
        $(#[$doc])*
        #[pyfunction]
        fn $name(
            py: Python<'_>,
            input: PyRef<'_, PyTensor>,
            output_size: &Bound<'_, PyAny>,
        ) -> PyResult<PyTensor> {
            let x = input.t.clone();
            let size = pool::adaptive_size(
                stringify!($name),
                &x,
                $dims,
                &self::output_size(output_size)?,
            )?;
            Ok(wrap(run(py, x.numel(), || {
                pool::avg_pool(stringify!($name), $dims, &x, &Kind::Adaptive(size), true, None)
            })?))
        }
    };
}
adaptive_avg_fn!(
    /// 1-d average pooling to a fixed output length.
    ///
    /// Args:
    ///   input (Tensor): the input.
    ///   output_size (int or tuple): the spatial size of the output.
    ///
    /// Returns:
    ///   Tensor: of shape ``(N, C, output_size)``.
    adaptive_avg_pool1d,
    1
);
adaptive_avg_fn!(
    /// 2-d average pooling to a fixed output size.
    ///
    /// Args:
    ///   input (Tensor): the input.
    ///   output_size (int or tuple): the output size (None in a tuple keeps the input's).
    ///
    /// Returns:
    ///   Tensor: of shape ``(N, C, *output_size)``.
    adaptive_avg_pool2d,
    2
);

macro_rules! adaptive_max_fn {
    ($(#[$doc:meta])* $name:ident, $dims:expr) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (input, output_size, return_indices=false))]
        fn $name(
            py: Python<'_>,
            input: PyRef<'_, PyTensor>,
            output_size: &Bound<'_, PyAny>,
            return_indices: bool,
        ) -> PyResult<Py<PyAny>> {
            let x = input.t.clone();
            let size = pool::adaptive_size(
                stringify!($name),
                &x,
                $dims,
                &self::output_size(output_size)?,
            )?;
            let r = run(py, x.numel(), || {
                pool::max_pool(stringify!($name), $dims, &x, &Kind::Adaptive(size))
            })?;
            values_or_pair(py, r, return_indices)
        }
    };
}
adaptive_max_fn!(
    /// 1-d max pooling to a fixed output length.
    ///
    /// Args:
    ///   input (Tensor): the input.
    ///   output_size (int or tuple): the spatial size of the output.
    ///   return_indices (bool): also return the flat indices of the maxima.
    ///
    /// Returns:
    ///   Tensor or tuple[Tensor, Tensor]: the maxima (and their indices).
    adaptive_max_pool1d,
    1
);
adaptive_max_fn!(
    /// 2-d max pooling to a fixed output size.
    ///
    /// Args:
    ///   input (Tensor): the input.
    ///   output_size (int or tuple): the output size (None in a tuple keeps the input's).
    ///   return_indices (bool): also return the flat indices of the maxima.
    ///
    /// Returns:
    ///   Tensor or tuple[Tensor, Tensor]: the maxima (and their indices).
    adaptive_max_pool2d,
    2
);
/// F.pad's CPU kernel: ``input`` gathered through one map per dim (None: the
/// dim as it is; else the source index of each output position, -1 for ``value``).
#[pyfunction]
fn _pad_gather(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    maps: Vec<Option<Vec<i64>>>,
    value: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let v = super::tensor::number(value)?;
    let x = input.t.clone();
    let maps = std::sync::Arc::new(maps);
    Ok(wrap(run(py, x.numel(), || crate::ops::pad::pad_gather(&x, maps, v))?))
}

/// interpolate's CPU kernel along one dim: output position j is
/// ``Σ_t weights[j·taps + t] · input[..., index[j·taps + t], ...]``.
#[pyfunction]
fn _resample(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    dim: usize,
    index: Vec<i64>,
    weights: Vec<f64>,
    taps: usize,
) -> PyResult<PyTensor> {
    let x = input.t.clone();
    let n = x.shape().get(dim).copied().unwrap_or(0);
    let taps = std::sync::Arc::new(crate::ops::resample::Taps {
        idx: index,
        w: Some(weights),
        k: taps,
        n,
    });
    Ok(wrap(run(py, x.numel(), || crate::ops::resample::resample(&x, dim, taps))?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_resample, m)?)?;
    m.add_function(wrap_pyfunction!(_pad_gather, m)?)?;
    m.add_function(wrap_pyfunction!(max_pool1d, m)?)?;
    m.add_function(wrap_pyfunction!(max_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(avg_pool1d, m)?)?;
    m.add_function(wrap_pyfunction!(avg_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_avg_pool1d, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_avg_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_max_pool1d, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_max_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(conv1d, m)?)?;
    m.add_function(wrap_pyfunction!(conv2d, m)?)?;
    m.add_function(wrap_pyfunction!(conv3d, m)?)?;
    m.add_function(wrap_pyfunction!(conv_transpose1d, m)?)?;
    m.add_function(wrap_pyfunction!(conv_transpose2d, m)?)?;
    m.add_function(wrap_pyfunction!(conv_transpose3d, m)?)?;
    m.add_function(wrap_pyfunction!(unfold, m)?)?;
    m.add_function(wrap_pyfunction!(fold, m)?)?;
    Ok(())
}
