//! The params structs passed to shaders: each is declared once with
//! `wgsl_params!` in its launcher file, as a `#[repr(C)]` bytemuck `Pod`
//! struct named like its WGSL twin. A test compares every twin's fields,
//! types, offsets and size with the WGSL struct as naga lays it out, and
//! fails for a WGSL params struct that has no Rust twin.

use super::shaders::Shader;

/// A field as the layout test sees it: name, byte offset, WGSL type.
pub struct Field {
    pub name: &'static str,
    pub offset: usize,
    pub wgsl: String,
}

/// The Rust twin of a WGSL params struct of `SHADER` with the same name.
pub trait ShaderParams: bytemuck::Pod {
    const SHADER: &'static Shader;
    const NAME: &'static str;
    fn fields() -> Vec<Field>;
}

/// The WGSL spelling of a params field type.
pub trait WgslType {
    fn wgsl() -> String;
}

macro_rules! scalar_wgsl {
    ($($t:ty),*) => {
        $(impl WgslType for $t {
            fn wgsl() -> String {
                stringify!($t).to_string()
            }
        })*
    };
}
scalar_wgsl!(u32, i32, f32);

impl<T: WgslType, const N: usize> WgslType for [T; N] {
    fn wgsl() -> String {
        format!("array<{}, {}>", T::wgsl(), N)
    }
}

/// Declares the Rust twin of the WGSL struct `$name` in shader `$shader`.
#[macro_export]
macro_rules! wgsl_params {
    ($(#[$m:meta])* $vis:vis struct $name:ident in $shader:path {
        $($(#[$fm:meta])* $f:ident: $t:ty),* $(,)?
    }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
        $vis struct $name { $($(#[$fm])* pub $f: $t),* }
        impl $crate::backend::gpu::params::ShaderParams for $name {
            const SHADER: &'static $crate::backend::gpu::shaders::Shader = &$shader;
            const NAME: &'static str = stringify!($name);
            fn fields() -> Vec<$crate::backend::gpu::params::Field> {
                use $crate::backend::gpu::params::WgslType;
                vec![$($crate::backend::gpu::params::Field {
                    name: stringify!($f),
                    offset: std::mem::offset_of!($name, $f),
                    wgsl: <$t>::wgsl(),
                }),*]
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::super::exec::Variant;
    use super::super::shaders::{source, ALL};
    use super::ShaderParams;
    use naga::{AddressSpace, ArraySize, ScalarKind, TypeInner};

    /// (shader, struct name, fields as (name, offset, type), size) of a twin.
    type Twin = (&'static str, String, Vec<(String, usize, String)>, usize);

    fn twin<P: ShaderParams>() -> Twin {
        let fields = P::fields().into_iter().map(|f| (f.name.into(), f.offset, f.wgsl)).collect();
        (P::SHADER.name, P::NAME.to_string(), fields, std::mem::size_of::<P>())
    }

    fn wgsl_type(m: &naga::Module, ty: naga::Handle<naga::Type>) -> String {
        match &m.types[ty].inner {
            TypeInner::Scalar(s) => match (s.kind, s.width) {
                (ScalarKind::Uint, 4) => "u32".into(),
                (ScalarKind::Sint, 4) => "i32".into(),
                (ScalarKind::Float, 4) => "f32".into(),
                other => format!("{:?}", other),
            },
            TypeInner::Array { base, size: ArraySize::Constant(n), .. } => {
                format!("array<{}, {}>", wgsl_type(m, *base), n)
            }
            other => format!("{:?}", other),
        }
    }

    /// Every struct bound as a storage variable (the params bindings) in every
    /// shader, laid out by naga as the Rust twin must be.
    fn wgsl_params() -> Vec<Twin> {
        let mut out = Vec::new();
        for s in ALL {
            let m = naga::front::wgsl::parse_str(&source(s, Variant::F32)).unwrap();
            let mut seen = std::collections::BTreeSet::new();
            for (_, g) in m.global_variables.iter() {
                if !matches!(g.space, AddressSpace::Storage { .. } | AddressSpace::Uniform) {
                    continue;
                }
                let ty = &m.types[g.ty];
                let TypeInner::Struct { members, span } = &ty.inner else { continue };
                let name = ty.name.clone().unwrap_or_default();
                if !seen.insert(name.clone()) {
                    continue;
                }
                let fields = members
                    .iter()
                    .map(|f| {
                        (f.name.clone().unwrap_or_default(), f.offset as usize, wgsl_type(&m, f.ty))
                    })
                    .collect();
                out.push((s.name, name, fields, *span as usize));
            }
        }
        out
    }

    #[test]
    fn params_match_their_wgsl_twins() {
        use super::super::{
            attention, batch_norm, bf16, conv, conv_igemm, elementwise, index, matmul, matmul_bf16,
            norm, pool, qgemm, random, reduce, rnn, sample, softmax, sort,
        };
        let rust = [
            twin::<attention::Params>(),
            twin::<conv::Params>(),
            twin::<conv_igemm::Params>(),
            twin::<batch_norm::Params>(),
            twin::<bf16::Params>(),
            twin::<elementwise::Params>(),
            twin::<index::Flat>(),
            twin::<index::Range>(),
            twin::<matmul::Params>(),
            twin::<matmul_bf16::Params>(),
            twin::<norm::Params>(),
            twin::<crate::optim::Opt>(),
            twin::<pool::Params>(),
            twin::<qgemm::Params>(),
            twin::<random::RngF>(),
            twin::<reduce::Params>(),
            twin::<rnn::Params>(),
            twin::<sample::Params>(),
            twin::<softmax::Params>(),
            twin::<sort::Params>(),
            twin::<sort::Search>(),
        ];
        let wgsl = wgsl_params();
        for w in &wgsl {
            let r = rust.iter().find(|r| r.0 == w.0 && r.1 == w.1);
            let r = r.unwrap_or_else(|| panic!("{}.wgsl: struct {} has no Rust twin", w.0, w.1));
            assert_eq!(r.2, w.2, "{}.wgsl: fields of {} (Rust, then WGSL)", w.0, w.1);
            assert_eq!(r.3, w.3, "{}.wgsl: size of {}", w.0, w.1);
        }
        for r in &rust {
            assert!(
                wgsl.iter().any(|w| w.0 == r.0 && w.1 == r.1),
                "{}: {} is bound by no shader",
                r.0,
                r.1
            );
        }
    }
}
