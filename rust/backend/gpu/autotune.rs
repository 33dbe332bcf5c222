//! The matmul variant (tile shape and k-split) per shape class: timed on the
//! adapter the first time a class is seen, kept in memory and in a JSON file
//! under the user's cache directory keyed by adapter, driver and backend.
//! `RUMUS_GPU_AUTOTUNE=0`, small products, or a cache that cannot be written
//! give the deterministic heuristic instead. `RUMUS_GPU_MATMUL_VARIANT`
//! (e.g. `64x64` or `128x128/s4`) forces a variant where it is valid, and
//! `RUMUS_GPU_AUTOTUNE_LOG=1` prints each choice to stderr. Float16 products
//! also time the tensor-core kernels (`coop`, `coop_direct`) where the
//! adapter has them: `coop` is the heuristic there for products without an
//! epilogue, and a tensor-core kernel stays only if it is faster.

use super::context;
use super::exec::{self, Variant};
use super::matmul::Tile;
use super::matmul_coop::Coop;
use crate::error::Result;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

/// A tile shape and the number of slices k is split into (1: none), or one
/// of the tensor-core kernels (backend/gpu/matmul_coop.rs, their own tiling).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub tile: Tile,
    pub split: usize,
    pub coop: Option<Coop>,
}

impl Choice {
    pub const fn coop(kernel: Coop) -> Choice {
        Choice { tile: Tile::T128x128, split: 1, coop: Some(kernel) }
    }

    pub fn tiled(tile: Tile, split: usize) -> Choice {
        Choice { tile, split, coop: None }
    }

    fn name(self) -> String {
        match self.coop {
            Some(k) => k.name().to_string(),
            None => format!("{}/s{}", self.tile.name(), self.split),
        }
    }

    fn parse(s: &str) -> Option<Choice> {
        if let Some(k) = Coop::ALL.into_iter().find(|k| k.name() == s) {
            return Some(Choice::coop(k));
        }
        let (t, sp) = s.split_once("/s").unwrap_or((s, "1"));
        Some(Choice::tiled(Tile::parse(t)?, sp.parse().ok().filter(|&v| v >= 1)?))
    }
}

/// One product as the tuner sees it.
#[derive(Copy, Clone, Debug)]
pub struct Problem {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub batch: usize,
    pub variant: Variant,
    /// Whether A is read along k and B along n (the kernel's fast directions).
    pub a_kfast: bool,
    pub b_nfast: bool,
    pub vec4: bool,
    /// An epilogue needs the whole sum in one dispatch: no split.
    pub epilogue: bool,
    /// The tensor-core kernels can compute it (a float16 product on an
    /// adapter with cooperative matrices; an epilogue runs after them).
    pub coop: bool,
}

/// Products below this many multiply-adds are not worth timing.
const MIN_TUNED: usize = 1 << 21;
/// Time spent timing one class, beyond each candidate's first (compiling) run.
const BUDGET: Duration = Duration::from_millis(50);

impl Problem {
    /// Whether `c` computes this product: splits only for a lone float32
    /// product without epilogue, into slices of k that are multiples of 8.
    pub fn allows(&self, c: Choice) -> bool {
        if c.coop.is_some() {
            return self.coop;
        }
        c.split == 1
            || (self.batch == 1
                && self.variant == Variant::F32
                && !self.epilogue
                && self.k.is_multiple_of(8 * c.split)
                && self.k / c.split >= 128)
    }

    /// The class key: sizes bucketed to powers of two, with everything that
    /// changes which kernels compete (`c`: the tensor-core kernels, so that a
    /// process with `RUMUS_GPU_DISABLE_COOP=1` keeps its own choices).
    fn class(&self) -> String {
        let b = |v: usize| v.next_power_of_two();
        format!(
            "{:?} m{} n{} k{} b{} {}{}{}{}{}",
            self.variant,
            b(self.m),
            b(self.n),
            b(self.k),
            b(self.batch),
            if self.a_kfast { "N" } else { "T" },
            if self.b_nfast { "N" } else { "T" },
            if self.vec4 { "4" } else { "1" },
            if self.epilogue { "e" } else { "" },
            if self.coop { "c" } else { "" },
        )
    }

    /// The deterministic choice: the widest tile that still gives a GPU
    /// enough workgroups, and for a lone long-k float32 product with few
    /// 128 x 128 tiles, enough k-slices for about 256 workgroups.
    pub fn heuristic(&self) -> Choice {
        if self.coop && !self.epilogue {
            return Choice::coop(Coop::Staged);
        }
        let tiles = Tile::T128x128.groups(self.m, self.n) * self.batch;
        if let Some(s) = [64, 32, 16, 8, 4, 2].into_iter().find(|&s| {
            tiles * s <= 256 && self.k / s >= 256 && self.allows(Choice::tiled(Tile::T128x128, s))
        }) {
            return Choice::tiled(Tile::T128x128, s);
        }
        let tile = [Tile::T128x128, Tile::T128x64, Tile::T64x128]
            .into_iter()
            .find(|t| t.groups(self.m, self.n) * self.batch >= 128)
            .unwrap_or(Tile::T64x64);
        Choice::tiled(tile, 1)
    }

    /// What the tuner times: every tile, and for splittable products each
    /// split that keeps the workgroups under about 1024.
    fn candidates(&self) -> Vec<Choice> {
        let mut out = vec![self.heuristic()];
        if self.coop {
            for c in Coop::ALL.map(Choice::coop) {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        for tile in Tile::ALL {
            for split in [1, 2, 4, 8, 16] {
                let c = Choice::tiled(tile, split);
                let few = split == 1 || tile.groups(self.m, self.n) * split <= 1024;
                if few && self.allows(c) && !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        out
    }
}

/// Whether the tensor-core kernels apply (`Problem::coop`): a float16
/// product on an adapter with cooperative matrices (an epilogue then runs as
/// elementwise ops after the product).
pub fn coop_applies(variant: Variant) -> Result<bool> {
    Ok(variant == Variant::F16 && super::matmul_coop::active(context::get()?).is_some())
}

struct State {
    /// Adapter key -> class -> choice; loaded from the file on first use.
    table: HashMap<String, String>,
    loaded: bool,
    writable: bool,
}

static STATE: LazyLock<Mutex<State>> =
    LazyLock::new(|| Mutex::new(State { table: HashMap::new(), loaded: false, writable: true }));

/// $RUMUS_CACHE_DIR, else $XDG_CACHE_HOME/rumus, else ~/.cache/rumus.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("RUMUS_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("rumus")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("rumus")))
}

fn cache_file() -> Option<PathBuf> {
    cache_dir().map(|d| d.join("gpu_matmul.json"))
}

fn adapter_key() -> Result<String> {
    let i = &context::get()?.info;
    Ok(format!("{} | {} {} | {:?}", i.name, i.driver, i.driver_info, i.backend))
}

/// The file's table for `adapter` ({adapter: {class: choice}}); empty when
/// absent or unreadable (a corrupt file is ignored and later replaced).
fn read_file(adapter: &str) -> HashMap<String, String> {
    let parsed = cache_file()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok());
    let mut out = HashMap::new();
    if let Some(serde_json::Value::Object(classes)) = parsed.as_ref().and_then(|v| v.get(adapter)) {
        for (k, v) in classes {
            if let Some(s) = v.as_str().filter(|s| Choice::parse(s).is_some()) {
                out.insert(k.clone(), s.to_string());
            }
        }
    }
    out
}

/// Merges `class -> choice` into the file (re-read first, so other processes'
/// entries survive) and replaces it atomically: a temp file, then a rename.
fn write_file(adapter: &str, class: &str, choice: &str) -> std::io::Result<()> {
    let path = cache_file().ok_or_else(|| std::io::Error::other("no cache directory"))?;
    let dir = path.parent().expect("cache file has a directory");
    std::fs::create_dir_all(dir)?;
    let mut root = std::fs::read_to_string(&path)
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .filter(|v| v.is_object())
        .unwrap_or_else(|| serde_json::json!({}));
    let entry = &mut root[adapter];
    if !entry.is_object() {
        *entry = serde_json::json!({});
    }
    entry[class] = serde_json::Value::String(choice.to_string());
    let tmp = dir.join(format!(".gpu_matmul.{}.tmp", std::process::id()));
    let text = serde_json::to_string_pretty(&root).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, &path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The latest choice per class and how it was made, for benchmarks and tests.
static CHOSEN: Mutex<Vec<(String, String, String)>> = Mutex::new(Vec::new());

/// (class, choice, how) for every class this process has chosen a variant
/// for beyond the small-product heuristic; how: tuned, cached, forced,
/// heuristic (tuning off) or the reason the cache could not be written.
pub fn choices() -> Vec<(String, String, String)> {
    crate::tensor::lock(&CHOSEN).clone()
}

fn log(class: &str, c: Choice, how: &str) {
    if std::env::var("RUMUS_GPU_AUTOTUNE_LOG").is_ok_and(|v| v == "1") {
        eprintln!("rumus autotune: {} -> {} ({})", class, c.name(), how);
    }
    let mut all = crate::tensor::lock(&CHOSEN);
    all.retain(|e| e.0 != class);
    all.push((class.to_string(), c.name(), how.to_string()));
}

/// The variant for `p`; `run` computes the product with a given choice (the
/// tuner calls it to time candidates, the caller then runs the result).
pub fn choose(p: &Problem, mut run: impl FnMut(Choice) -> Result<()>) -> Result<Choice> {
    let class = p.class();
    if let Some(c) = std::env::var("RUMUS_GPU_MATMUL_VARIANT")
        .ok()
        .and_then(|s| Choice::parse(&s))
        .filter(|&c| p.allows(c))
    {
        log(&class, c, "forced");
        return Ok(c);
    }
    let fallback = p.heuristic();
    if p.m * p.n * p.k * p.batch < MIN_TUNED {
        return Ok(fallback);
    }
    if std::env::var("RUMUS_GPU_AUTOTUNE").is_ok_and(|v| v == "0") {
        log(&class, fallback, "heuristic");
        return Ok(fallback);
    }
    let adapter = adapter_key()?;
    {
        let mut st = crate::tensor::lock(&STATE);
        if !st.writable {
            drop(st);
            log(&class, fallback, "heuristic: cache not writable");
            return Ok(fallback);
        }
        if !st.loaded {
            st.table = read_file(&adapter);
            st.loaded = true;
        }
        if let Some(c) = st.table.get(&class).and_then(|s| Choice::parse(s)) {
            // A choice from another shape of the class may not apply to this one.
            let c = if p.allows(c) { c } else { fallback };
            log(&class, c, "cached");
            return Ok(c);
        }
    }
    let best = tune(p, &mut run)?;
    let mut st = crate::tensor::lock(&STATE);
    if let Err(e) = write_file(&adapter, &class, &best.name()) {
        // Unpersisted choices would differ from run to run: heuristics from now on.
        st.writable = false;
        log(&class, fallback, &format!("cache not writable: {}", e));
        return Ok(fallback);
    }
    st.table.insert(class.clone(), best.name());
    log(&class, best, "tuned");
    Ok(best)
}

/// Times the candidates (after one untimed run each, which compiles its
/// pipeline) by wall time between synchronizations, a few runs each, within
/// the budget; the heuristic choice is timed first and wins ties.
fn tune(p: &Problem, run: &mut impl FnMut(Choice) -> Result<()>) -> Result<Choice> {
    let cands = p.candidates();
    for &c in &cands {
        run(c)?;
    }
    exec::synchronize()?;
    let started = Instant::now();
    let mut best = (Duration::MAX, cands[0]);
    for &c in &cands {
        if started.elapsed() > BUDGET && best.0 != Duration::MAX {
            break;
        }
        let t0 = Instant::now();
        for _ in 0..3 {
            run(c)?;
        }
        exec::synchronize()?;
        let dt = t0.elapsed();
        if dt < best.0 {
            best = (dt, c);
        }
    }
    Ok(best.1)
}
