//! The WGSL sources, embedded at build time (shaders/README.md has the ABI).

pub struct Shader {
    pub name: &'static str,
    pub source: &'static str,
}

macro_rules! shaders {
    ($($id:ident = $file:literal),* $(,)?) => {
        $(pub const $id: Shader = Shader { name: $file, source: include_str!(concat!("../../../shaders/", $file, ".wgsl")) };)*
        /// Every shader, for validation in tests.
        pub const ALL: &[Shader] = &[$($id),*];
    };
}

shaders! {
    ELEMENTWISE = "elementwise",
    INDEX = "index",
    MATMUL = "matmul",
    OPTIM = "optim",
    RANDOM = "random",
    REDUCE = "reduce",
    SOFTMAX = "softmax",
    NORM = "norm",
    CONV = "conv",
    POOL = "pool",
}

#[cfg(test)]
mod tests {
    use super::super::exec::{source, used_bindings, Variant};

    /// Every shader parses and validates with naga, in both float variants,
    /// and every entry point's bindings follow the ABI (group 0 only).
    #[test]
    fn shaders_validate() {
        for s in super::ALL {
            for v in [Variant::F32, Variant::F16] {
                let src = source(s, v);
                let module = naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| {
                    panic!("{}.wgsl ({:?}): {}", s.name, v, e.emit_to_string(&src))
                });
                for (_, g) in module.global_variables.iter() {
                    if let Some(b) = &g.binding {
                        assert_eq!(b.group, 0, "{}.wgsl: binding outside group 0", s.name);
                    }
                }
                for ep in &module.entry_points {
                    used_bindings(&src, &ep.name)
                        .unwrap_or_else(|e| panic!("{}.wgsl ({:?}) {}: {}", s.name, v, ep.name, e));
                }
            }
        }
    }
}
