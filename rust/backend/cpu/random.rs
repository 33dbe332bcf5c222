//! Random number generation: a seedable ChaCha8 generator (its whole state is
//! seed + stream + position, so it can be saved and restored exactly) and fills.

use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution, Gamma, Poisson, StandardNormal};
use std::sync::{Arc, LazyLock, Mutex};

pub struct Generator {
    rng: ChaCha8Rng,
    seed: u64,
}

pub type GeneratorRef = Arc<Mutex<Generator>>;

/// Bytes of `Generator::state()`.
pub const STATE_BYTES: usize = 8 + 8 + 16;

/// Default seed, as PyTorch's default generator.
const DEFAULT_SEED: u64 = 67280421310721;

static DEFAULT: LazyLock<GeneratorRef> =
    LazyLock::new(|| Arc::new(Mutex::new(Generator::new(DEFAULT_SEED))));

pub fn default_generator() -> GeneratorRef {
    DEFAULT.clone()
}

impl Generator {
    pub fn new(seed: u64) -> Generator {
        Generator { rng: ChaCha8Rng::seed_from_u64(seed), seed }
    }
    pub fn manual_seed(&mut self, seed: u64) {
        *self = Generator::new(seed);
    }
    pub fn initial_seed(&self) -> u64 {
        self.seed
    }
    /// A key for a device generator (GPU fills draw one per call).
    pub fn next_key(&mut self) -> u64 {
        self.rng.random()
    }
    /// seed (u64 LE) + stream (u64 LE) + word position (u128 LE).
    pub fn state(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(STATE_BYTES);
        v.extend_from_slice(&self.seed.to_le_bytes());
        v.extend_from_slice(&self.rng.get_stream().to_le_bytes());
        v.extend_from_slice(&self.rng.get_word_pos().to_le_bytes());
        v
    }
    pub fn set_state(&mut self, bytes: &[u8]) -> Option<()> {
        if bytes.len() != STATE_BYTES {
            return None;
        }
        let seed = u64::from_le_bytes(bytes[0..8].try_into().ok()?);
        let stream = u64::from_le_bytes(bytes[8..16].try_into().ok()?);
        let pos = u128::from_le_bytes(bytes[16..32].try_into().ok()?);
        let mut g = Generator::new(seed);
        g.rng.set_stream(stream);
        g.rng.set_word_pos(pos);
        *self = g;
        Some(())
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, out: &mut [f64], lo: f64, hi: f64) {
        for x in out {
            *x = lo + (hi - lo) * self.rng.random::<f64>();
        }
    }
    /// True with probability p, from one 32-bit draw each (dropout masks are
    /// large and ChaCha words dominate their cost).
    pub fn bernoulli(&mut self, out: &mut [bool], p: f64) {
        let below = (p * 4294967296.0) as u64;
        for x in out {
            *x = u64::from(self.rng.random::<u32>()) < below;
        }
    }
    /// Fills `out` with `f`, in parallel for large fills. Each chunk of
    /// `FILL_CHUNK` elements draws from its own ChaCha8 stream keyed by one
    /// draw of this generator, so the values depend on the seed only, never
    /// on the thread count.
    fn fill<T: Send>(&mut self, out: &mut [T], f: impl Fn(&mut ChaCha8Rng, &mut [T]) + Sync) {
        const FILL_CHUNK: usize = 1 << 16;
        if out.len() < 2 * FILL_CHUNK {
            return f(&mut self.rng, out);
        }
        let key: u64 = self.rng.random();
        let (n, p) = (out.len(), super::P(out.as_mut_ptr()));
        super::team::for_each(n.div_ceil(FILL_CHUNK), |c| {
            let lo = c * FILL_CHUNK;
            // SAFETY: chunks are disjoint ranges of `out`.
            let part = unsafe {
                std::slice::from_raw_parts_mut(p.at(lo as isize), FILL_CHUNK.min(n - lo))
            };
            let mut rng = ChaCha8Rng::seed_from_u64(key);
            rng.set_stream(c as u64);
            f(&mut rng, part);
        });
    }
    pub fn uniform_f32(&mut self, out: &mut [f32], lo: f32, hi: f32) {
        self.fill(out, |rng, out| {
            for x in out {
                // Clamp: lo + (hi-lo)*u can round up to hi in float32.
                let v = lo + (hi - lo) * rng.random::<f32>();
                *x = if v >= hi { lo.max(hi - (hi - lo) * f32::EPSILON) } else { v };
            }
        });
    }
    pub fn normal_f32(&mut self, out: &mut [f32], mean: f32, std: f32) {
        self.fill(out, |rng, out| {
            for x in out {
                let z: f32 = StandardNormal.sample(rng);
                *x = mean + std * z;
            }
        });
    }
    pub fn normal(&mut self, out: &mut [f64], mean: f64, std: f64) {
        self.fill(out, |rng, out| {
            for x in out {
                let z: f64 = StandardNormal.sample(rng);
                *x = mean + std * z;
            }
        });
    }
    /// Γ(α, 1) draws, one per α > 0 (torch._standard_gamma).
    pub fn standard_gamma(&mut self, alpha: &[f64]) -> Vec<f64> {
        let draw = |rng: &mut ChaCha8Rng, a: f64| match Gamma::new(a, 1.0) {
            Ok(d) => d.sample(rng),
            Err(_) => f64::NAN,
        };
        alpha.iter().map(|&a| draw(&mut self.rng, a)).collect()
    }
    /// Poisson counts, one per rate ≥ 0 (a zero rate draws 0).
    pub fn poisson(&mut self, rate: &[f64]) -> Vec<f64> {
        let draw = |rng: &mut ChaCha8Rng, r: f64| match Poisson::new(r) {
            Ok(d) => d.sample(rng),
            Err(_) if r == 0.0 => 0.0,
            Err(_) => f64::NAN,
        };
        rate.iter().map(|&r| draw(&mut self.rng, r)).collect()
    }
    /// Binomial counts, one per (count, prob) pair (count a whole number ≥ 0).
    pub fn binomial(&mut self, count: &[f64], prob: &[f64]) -> Vec<f64> {
        let draw = |rng: &mut ChaCha8Rng, n: f64, p: f64| match Binomial::new(n as u64, p) {
            Ok(d) => d.sample(rng) as f64,
            Err(_) => f64::NAN,
        };
        count.iter().zip(prob).map(|(&n, &p)| draw(&mut self.rng, n, p)).collect()
    }
    /// Integers uniform in [lo, hi); hi > lo.
    pub fn randint(&mut self, out: &mut [i64], lo: i64, hi: i64) {
        for x in out {
            *x = self.rng.random_range(lo..hi);
        }
    }
    pub fn randperm(&mut self, n: usize) -> Vec<i64> {
        let mut v: Vec<i64> = (0..n as i64).collect();
        v.shuffle(&mut self.rng);
        v
    }
}

/// Philox blocks computed together (lanes of one vector loop).
const LANES: usize = 16;

/// Philox4x32-10, as shaders/random.wgsl computes it: word w of counter
/// (block0 + i, 0, 0, 0) under `key` is the low half of [w][i], for LANES
/// blocks at once. The words live in 64-bit lanes whose high halves are
/// ignored, so each 32×32→64 product is one `vpmuludq` with no widening.
#[inline(always)]
fn philox(block0: u32, key: u64) -> [[u64; LANES]; 4] {
    const LO: u64 = 0xFFFF_FFFF;
    let mut c = [[0u64; LANES]; 4];
    for (i, x) in c[0].iter_mut().enumerate() {
        *x = block0.wrapping_add(i as u32) as u64;
    }
    let mut k = [key as u32, (key >> 32) as u32];
    for _ in 0..10 {
        for i in 0..LANES {
            let p0 = 0xD251_1F53 * (c[0][i] & LO);
            let p1 = 0xCD9E_8D57 * (c[2][i] & LO);
            c[0][i] = (p1 >> 32) ^ c[1][i] ^ k[0] as u64;
            c[1][i] = p1;
            c[2][i] = (p0 >> 32) ^ c[3][i] ^ k[1] as u64;
            c[3][i] = p0;
        }
        k = [k[0].wrapping_add(0x9E37_79B9), k[1].wrapping_add(0xBB67_AE85)];
    }
    c
}

/// A dropout mask: element e is `scale` when the 24-bit uniform of word
/// e % 4 of Philox block e / 4 is below `keep`, else 0: the numbers the GPU's
/// bernoulli_mask (and its fused twin) draws from the same key, so a seed
/// drops the same elements on both devices. In parallel over chunks.
pub fn dropout_mask<T>(out: &mut [T], key: u64, keep: f32, scale: T)
where
    T: Copy + Send + Sync + num_traits::Zero,
{
    const CHUNK: usize = 1 << 14;
    const GROUP: usize = 4 * LANES;
    // u < keep for the 24-bit u = (w >> 8) / 2^24, in integers.
    let thr = (keep as f64 * 16_777_216.0).ceil() as u32;
    let (n, p) = (out.len(), super::P(out.as_mut_ptr()));
    super::team::for_each_if(n, n.div_ceil(CHUNK), |c| {
        let lo = c * CHUNK;
        // SAFETY: chunks are disjoint ranges of `out`.
        let part = unsafe { std::slice::from_raw_parts_mut(p.at(lo as isize), CHUNK.min(n - lo)) };
        super::simd(
            #[inline(always)]
            || {
                for (g, group) in part.chunks_mut(GROUP).enumerate() {
                    let w = philox(((lo + g * GROUP) / 4) as u32, key);
                    let v = w.map(|ws| {
                        ws.map(|x| if (x as u32) >> 8 < thr { scale } else { T::zero() })
                    });
                    if let Ok(full) = <&mut [T; GROUP]>::try_from(&mut *group) {
                        for (i, quad) in full.chunks_exact_mut(4).enumerate() {
                            quad.copy_from_slice(&[v[0][i], v[1][i], v[2][i], v[3][i]]);
                        }
                    } else {
                        for (e, x) in group.iter_mut().enumerate() {
                            *x = v[e % 4][e / 4];
                        }
                    }
                }
            },
        )
    });
}
