//! Binding of the fused optimizer step: one call updates every parameter of a
//! param group (the loop over tensors runs in Rust, without the GIL).

use super::gil::run;
use super::tensor::PyTensor;
use crate::optim::{step, Rule};
use crate::tensor::Tensor;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn rule(kind: &str, h: &Bound<'_, PyDict>) -> PyResult<Rule> {
    let f = |k: &str| -> PyResult<f64> {
        h.get_item(k)?
            .ok_or_else(|| {
                PyKeyError::new_err(format!("optimizer hyperparameter '{}' missing", k))
            })?
            .extract()
    };
    let b = |k: &str| -> PyResult<bool> { h.get_item(k)?.map_or(Ok(false), |v| v.is_truthy()) };
    let pair = |k: &str| -> PyResult<(f64, f64)> {
        h.get_item(k)?
            .ok_or_else(|| {
                PyKeyError::new_err(format!("optimizer hyperparameter '{}' missing", k))
            })?
            .extract()
    };
    let betas = || pair("betas");
    // Rprop has no weight decay.
    let wd = h.get_item("weight_decay")?.map_or(Ok(0.0), |v| v.extract())?;
    let (lr, maximize) = (f("lr")?, b("maximize")?);
    Ok(match kind {
        "sgd" => Rule::Sgd {
            lr,
            momentum: f("momentum")?,
            dampening: f("dampening")?,
            nesterov: b("nesterov")?,
            wd,
            maximize,
        },
        "adam" | "adamw" => {
            let (b1, b2) = betas()?;
            Rule::Adam {
                lr,
                b1,
                b2,
                eps: f("eps")?,
                wd,
                amsgrad: b("amsgrad")?,
                maximize,
                decoupled: kind == "adamw" || b("decoupled_weight_decay")?,
            }
        }
        "rmsprop" => Rule::RmsProp {
            lr,
            alpha: f("alpha")?,
            eps: f("eps")?,
            wd,
            momentum: f("momentum")?,
            centered: b("centered")?,
            maximize,
        },
        "adagrad" => Rule::Adagrad { lr, lr_decay: f("lr_decay")?, wd, eps: f("eps")?, maximize },
        "adamax" => {
            let (b1, b2) = betas()?;
            Rule::Adamax { lr, b1, b2, eps: f("eps")?, wd, maximize }
        }
        "nadam" => {
            let (b1, b2) = betas()?;
            Rule::NAdam {
                lr,
                b1,
                b2,
                eps: f("eps")?,
                wd,
                momentum_decay: f("momentum_decay")?,
                decoupled: b("decoupled_weight_decay")?,
                maximize,
            }
        }
        "radam" => {
            let (b1, b2) = betas()?;
            Rule::RAdam {
                lr,
                b1,
                b2,
                eps: f("eps")?,
                wd,
                decoupled: b("decoupled_weight_decay")?,
                maximize,
            }
        }
        "adadelta" => Rule::Adadelta { lr, rho: f("rho")?, eps: f("eps")?, wd, maximize },
        "asgd" => {
            Rule::Asgd { lr, lambd: f("lambd")?, alpha: f("alpha")?, t0: f("t0")?, wd, maximize }
        }
        "rprop" => {
            let ((eta_minus, eta_plus), (step_min, step_max)) =
                (pair("etas")?, pair("step_sizes")?);
            Rule::Rprop { eta_minus, eta_plus, step_min, step_max, maximize }
        }
        _ => return Err(PyValueError::new_err(format!("unknown optimizer '{}'", kind))),
    })
}

fn tensors(v: &[PyRef<'_, PyTensor>]) -> Vec<Tensor> {
    v.iter().map(|t| t.t.clone()).collect()
}

/// Updates params[i] from grads[i] with states[i] (tensors shaped like the
/// parameter) and scalars[i] (0-d step counters); fresh[i]: state just created.
#[pyfunction]
#[pyo3(signature = (kind, group, params, grads, states, scalars, fresh))]
fn _optimizer_step(
    py: Python<'_>,
    kind: &str,
    group: &Bound<'_, PyDict>,
    params: Vec<PyRef<'_, PyTensor>>,
    grads: Vec<PyRef<'_, PyTensor>>,
    states: Vec<Vec<PyRef<'_, PyTensor>>>,
    scalars: Vec<Vec<PyRef<'_, PyTensor>>>,
    fresh: Vec<bool>,
) -> PyResult<()> {
    let r = rule(kind, group)?;
    let n = params.len();
    if grads.len() != n || states.len() != n || scalars.len() != n || fresh.len() != n {
        return Err(PyValueError::new_err("_optimizer_step: lists of different lengths"));
    }
    let (p, g) = (tensors(&params), tensors(&grads));
    let s: Vec<Vec<Tensor>> = states.iter().map(|v| tensors(v)).collect();
    let k: Vec<Vec<Tensor>> = scalars.iter().map(|v| tensors(v)).collect();
    let one = |i: usize| step(&r, &p[i], &g[i], &s[i], &k[i], fresh[i]);
    let work = p.iter().map(Tensor::numel).sum();
    run(py, work, || {
        // Large tensors split their own update over the team; the small ones
        // share it, several tensors at once, when there is enough work.
        let (large, small): (Vec<usize>, Vec<usize>) =
            (0..n).partition(|&i| crate::optim::splits(p[i].numel()));
        large.into_iter().try_for_each(one)?;
        let rest: usize = small.iter().map(|&i| p[i].numel()).sum();
        if small.len() > 1 && crate::backend::cpu::parallel(rest) {
            crate::backend::cpu::team::map(small.len(), |j| one(small[j])).into_iter().collect()
        } else {
            small.into_iter().try_for_each(one)
        }
    })?;
    Ok(())
}

/// GradScaler's fused inf/NaN check and unscale: grads[i] *= inv_scale in
/// place; found_inf becomes 1 if any element is inf or NaN (no host sync).
#[pyfunction]
fn _amp_foreach_non_finite_check_and_unscale_(
    py: Python<'_>,
    grads: Vec<PyRef<'_, PyTensor>>,
    found_inf: PyRef<'_, PyTensor>,
    inv_scale: PyRef<'_, PyTensor>,
) -> PyResult<()> {
    let g = tensors(&grads);
    let (f, s) = (found_inf.t.clone(), inv_scale.t.clone());
    let work = g.iter().map(Tensor::numel).sum();
    run(py, work, || crate::optim::amp::non_finite_check_and_unscale(&g, &f, &s))?;
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_optimizer_step, m)?)?;
    m.add_function(wrap_pyfunction!(_amp_foreach_non_finite_check_and_unscale_, m)?)?;
    Ok(())
}
