//! Numbers shared by the Rust launchers and the WGSL, written once, here or in
//! the op enums: each `wgsl_codes!` enum becomes `const` declarations that
//! `shaders::source` prepends to the shaders that list it, so a shader says
//! `case UNARY_EXP` where Rust passes `UnaryCode::Exp as u32`. Flag bits of
//! params words are `wgsl_flags!` tables, read the same way (`POOL_ADAPTIVE`).

/// A fieldless enum whose discriminants the shaders see as constants named
/// `<PREFIX>_<VARIANT IN UPPER SNAKE CASE>`.
pub trait WgslCodes {
    const PREFIX: &'static str;
    const VARIANTS: &'static [(&'static str, u32)];
}

/// Declares a `#[repr(u32)]` enum and its `WgslCodes` table.
#[macro_export]
macro_rules! wgsl_codes {
    ($(#[$m:meta])* $vis:vis enum $name:ident = $prefix:literal {
        $($(#[$vm:meta])* $v:ident $(= $val:expr)?),* $(,)?
    }) => {
        $(#[$m])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq)]
        #[repr(u32)]
        $vis enum $name { $($(#[$vm])* $v $(= $val)?),* }
        impl $crate::backend::gpu::codes::WgslCodes for $name {
            const PREFIX: &'static str = $prefix;
            const VARIANTS: &'static [(&'static str, u32)] =
                &[$((stringify!($v), $name::$v as u32)),*];
        }
    };
}

/// Declares a table of flag bits: associated `u32` constants of a unit struct
/// (several names may share a bit when entries read it differently), seen by
/// the shaders as `<PREFIX>_<NAME>`.
#[macro_export]
macro_rules! wgsl_flags {
    ($(#[$m:meta])* $vis:vis struct $name:ident = $prefix:literal {
        $($(#[$vm:meta])* $v:ident = $val:expr),* $(,)?
    }) => {
        $(#[$m])*
        $vis struct $name;
        impl $name {
            $($(#[$vm])* pub const $v: u32 = $val;)*
        }
        impl $crate::backend::gpu::codes::WgslCodes for $name {
            const PREFIX: &'static str = $prefix;
            const VARIANTS: &'static [(&'static str, u32)] = &[$((stringify!($v), $val)),*];
        }
    };
}

/// `bit` when `on`, else 0: one flag of a `wgsl_flags!` table.
pub fn flag(on: bool, bit: u32) -> u32 {
    if on {
        bit
    } else {
        0
    }
}

/// `GeluTanh` -> `GELU_TANH`; a name without lower case stays as it is.
fn upper_snake(name: &str) -> String {
    if !name.chars().any(|c| c.is_ascii_lowercase()) {
        return name.to_string();
    }
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// (WGSL name, value) of every code of `C`.
pub fn table<C: WgslCodes>() -> Vec<(String, u32)> {
    C::VARIANTS.iter().map(|(v, x)| (format!("{}_{}", C::PREFIX, upper_snake(v)), *x)).collect()
}

/// The WGSL declarations of some code tables.
pub fn declarations(tables: &[Vec<(String, u32)>]) -> String {
    let mut out = String::new();
    for (name, value) in tables.iter().flatten() {
        out.push_str(&format!("const {}: u32 = {}u;\n", name, value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::upper_snake;

    #[test]
    fn names() {
        assert_eq!(upper_snake("GeluTanh"), "GELU_TANH");
        assert_eq!(upper_snake("Exp2"), "EXP2");
        assert_eq!(upper_snake("IsNan"), "IS_NAN");
        assert_eq!(upper_snake("INCLUDE_PAD"), "INCLUDE_PAD");
    }
}
