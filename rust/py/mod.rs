//! PyO3 bindings: the `rumus._rumus` extension module. Only this directory
//! knows about Python.

mod autograd;
mod complex;
mod conversion_methods;
mod convert;
mod creation;
mod ctc;
mod dlpack;
mod dtype;
mod error;
mod functions;
mod gil;
mod gpu;
mod hooks;
mod index;
mod linalg;
mod math_methods;
mod methods;
mod nn;
mod nn_layers;
mod numpy;
mod optim;
mod quant;
mod reduce_methods;
mod rnn;
mod sample;
mod sampling;
mod serialization;
mod shape_methods;
mod sort;
mod sysinfo;
mod tensor;

use crate::tensor::dtype::ALL_DTYPES;
use pyo3::prelude::*;

#[pymodule]
fn _rumus(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::backend::cpu::watch_fork();
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<dtype::PyDType>()?;
    m.add_class::<dtype::PyDevice>()?;
    m.add_class::<dtype::PyGenerator>()?;
    // The unary table's methods, also `rumus.<name>` functions.
    m.add("_unary_functions", crate::ops::elementwise::UNARY_FUNCTIONS.to_vec())?;
    for d in ALL_DTYPES {
        m.add(d.name(), dtype::PyDType { d })?;
    }
    m.add_function(wrap_pyfunction!(creation::tensor, m)?)?;
    m.add_function(wrap_pyfunction!(functions::einsum, m)?)?;
    m.add_function(wrap_pyfunction!(functions::meshgrid, m)?)?;
    m.add_function(wrap_pyfunction!(creation::as_tensor_fn, m)?)?;
    m.add_function(wrap_pyfunction!(creation::from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(creation::zeros, m)?)?;
    m.add_function(wrap_pyfunction!(creation::ones, m)?)?;
    m.add_function(wrap_pyfunction!(creation::empty, m)?)?;
    m.add_function(wrap_pyfunction!(creation::full, m)?)?;
    m.add_function(wrap_pyfunction!(creation::_dropout_mask, m)?)?;
    m.add_function(wrap_pyfunction!(creation::zeros_like, m)?)?;
    m.add_function(wrap_pyfunction!(creation::ones_like, m)?)?;
    m.add_function(wrap_pyfunction!(creation::empty_like, m)?)?;
    m.add_function(wrap_pyfunction!(creation::full_like, m)?)?;
    m.add_function(wrap_pyfunction!(creation::rand_like, m)?)?;
    m.add_function(wrap_pyfunction!(creation::randn_like, m)?)?;
    m.add_function(wrap_pyfunction!(creation::arange, m)?)?;
    m.add_function(wrap_pyfunction!(creation::linspace, m)?)?;
    m.add_function(wrap_pyfunction!(creation::eye, m)?)?;
    m.add_function(wrap_pyfunction!(creation::rand, m)?)?;
    m.add_function(wrap_pyfunction!(creation::randn, m)?)?;
    m.add_function(wrap_pyfunction!(creation::randint, m)?)?;
    m.add_function(wrap_pyfunction!(creation::randperm, m)?)?;
    m.add_function(wrap_pyfunction!(creation::manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(creation::initial_seed, m)?)?;
    m.add_function(wrap_pyfunction!(creation::get_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(creation::set_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(functions::cat, m)?)?;
    m.add_function(wrap_pyfunction!(functions::stack, m)?)?;
    m.add_function(wrap_pyfunction!(functions::where_fn, m)?)?;
    m.add_function(wrap_pyfunction!(functions::one_hot, m)?)?;
    m.add_function(wrap_pyfunction!(functions::result_type, m)?)?;
    m.add_function(wrap_pyfunction!(functions::promote_types, m)?)?;
    m.add_function(wrap_pyfunction!(functions::is_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(functions::broadcast_shapes, m)?)?;
    m.add_function(wrap_pyfunction!(functions::get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(functions::set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(functions::get_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(functions::set_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(functions::empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(dtype::set_default_device, m)?)?;
    m.add_function(wrap_pyfunction!(dtype::get_default_device, m)?)?;
    autograd::register(m)?;
    hooks::register(m)?;
    nn::register(m)?;
    nn_layers::register(m)?;
    ctc::register(m)?;
    dlpack::register(m)?;
    linalg::register(m)?;
    optim::register(m)?;
    gpu::register(m)?;
    serialization::register(m)?;
    sort::register(m)?;
    quant::register(m)?;
    rnn::register(m)?;
    sample::register(m)?;
    math_methods::register(m)?;
    sampling::register(m)?;
    sysinfo::register(m)?;
    complex::register(m)?;
    Ok(())
}
