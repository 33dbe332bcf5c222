//! The WGSL sources, embedded at build time (shaders/README.md has the ABI).

use super::codes::{declarations, table};
use super::exec::Variant;

pub struct Shader {
    pub name: &'static str,
    pub source: &'static str,
    /// The code tables (`codes::WgslCodes`) this shader reads.
    pub codes: fn() -> Vec<Vec<(String, u32)>>,
}

macro_rules! shaders {
    ($($id:ident = $file:literal [$($code:ty),*]),* $(,)?) => {
        $(pub const $id: Shader = Shader {
            name: $file,
            source: include_str!(concat!("../../../shaders/", $file, ".wgsl")),
            codes: || vec![$(table::<$code>()),*],
        };)*
        /// Every shader, for validation in tests.
        pub const ALL: &[Shader] = &[$($id),*];
    };
}

shaders! {
    ELEMENTWISE = "elementwise" [
        crate::ops::elementwise::UnaryCode,
        crate::ops::elementwise::Binary,
        super::dtype::Kind,
        super::elementwise::ElemFlags
    ],
    INDEX = "index" [],
    MATMUL = "matmul" [],
    OPTIM = "optim" [crate::optim::OptFlags],
    RANDOM = "random" [],
    REDUCE = "reduce" [],
    SOFTMAX = "softmax" [],
    NORM = "norm" [super::norm::NormFlags],
    CONV = "conv" [],
    CONV_IGEMM = "conv_igemm" [],
    BATCH_NORM = "batch_norm" [],
    POOL = "pool" [super::pool::PoolFlags],
    SORT = "sort" [super::dtype::Kind],
    QGEMM = "qgemm" [],
    RNN = "rnn" [],
    SAMPLE = "sample" [crate::ops::sample::GridMode, crate::ops::sample::GridPad],
    ATTENTION = "attention" [super::attention::AttnFlags],
    BF16 = "bf16" [super::dtype::Kind, super::elementwise::ElemFlags],
    MATMUL_BF16 = "matmul_bf16" [],
}

/// The WGSL compiled for one variant: the shader's code constants, then its
/// text; float16 rewrites the `alias T = f32;` line (and enables f16 first,
/// as WGSL wants directives before declarations).
pub fn source(shader: &Shader, variant: Variant) -> String {
    let consts = declarations(&(shader.codes)());
    match variant {
        Variant::F32 => consts + shader.source,
        Variant::F16 => {
            "enable f16;\n".to_string()
                + &consts
                + &shader.source.replacen("alias T = f32;", "alias T = f16;", 1)
        }
    }
}

/// The shader named `name` (the file stem), if any.
pub fn by_name(name: &str) -> Option<&'static Shader> {
    ALL.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::super::exec::{used_bindings, Variant};
    use super::source;

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

    /// Every entry point is dispatched: its name appears as a string literal in
    /// the launchers (backend/gpu/, optim/), so a kernel nothing runs fails.
    #[test]
    fn every_entry_point_is_dispatched() {
        fn rust_sources(dir: &std::path::Path, out: &mut String) {
            for e in std::fs::read_dir(dir).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    rust_sources(&path, out);
                } else if path.extension().is_some_and(|x| x == "rs")
                    && !path.ends_with("shaders.rs")
                {
                    out.push_str(&std::fs::read_to_string(&path).unwrap());
                }
            }
        }
        let mut rust = String::new();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rust");
        rust_sources(&root.join("backend/gpu"), &mut rust);
        rust_sources(&root.join("optim"), &mut rust);
        let mut dead = Vec::new();
        for s in super::ALL {
            let src = source(s, Variant::F32);
            let module = naga::front::wgsl::parse_str(&src).unwrap();
            for ep in &module.entry_points {
                if !rust.contains(&format!("\"{}\"", ep.name)) {
                    dead.push(format!("{}.wgsl: {}", s.name, ep.name));
                }
            }
        }
        assert!(dead.is_empty(), "entry points no Rust code dispatches: {:?}", dead);
    }
}
