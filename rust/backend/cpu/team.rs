//! The thread team CPU kernels split work over: the calling thread plus
//! `threads() - 1` helpers that spin for a while after each job before they
//! park. A training step runs hundreds of small parallel kernels separated by
//! a few microseconds of Python; handing each one to a sleeping pool (rayon's
//! workers park within microseconds, and the caller waits on a futex) cost
//! more than the kernels themselves. Here the caller works too and helpers
//! that are still spinning pick up the next job within a fraction of a
//! microsecond.
//!
//! One job runs at a time. A call made while the team is busy (from another
//! Python thread with the GIL released, or from inside a task) runs on the
//! calling thread alone, so nesting can never deadlock.

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::SeqCst};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long an idle helper spins before it parks: longer than the Python-side
/// gaps between the kernels of one training step.
const SPIN: Duration = Duration::from_micros(500);

type Task<'a> = &'a (dyn Fn(usize) + Sync);

struct Team {
    /// Odd while a job is open; every job adds 2.
    epoch: AtomicUsize,
    /// Helpers that may be reading the current job's fields.
    inside: AtomicUsize,
    /// Points to the open job's `Task` (on the caller's stack).
    task: AtomicPtr<()>,
    n: AtomicUsize,
    /// Tasks claimed at a time: one atomic claim per batch rather than per task.
    batch: AtomicUsize,
    /// The next batch to claim.
    next: AtomicUsize,
    /// Tasks finished.
    done: AtomicUsize,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// Held by the caller for the whole job.
    busy: Mutex<()>,
    sleepers: AtomicUsize,
    sleep: Mutex<()>,
    wake: Condvar,
    /// Helpers started so far (they live as long as the process).
    spawned: Mutex<usize>,
    /// Helpers that join jobs: those numbered below it.
    active: AtomicUsize,
}

/// The team, created on first use with `threads() - 1` helpers.
fn get() -> &'static Team {
    static TEAM: OnceLock<&'static Team> = OnceLock::new();
    TEAM.get_or_init(|| {
        let t: &'static Team = Box::leak(Box::new(Team {
            epoch: AtomicUsize::new(0),
            inside: AtomicUsize::new(0),
            task: AtomicPtr::new(std::ptr::null_mut()),
            n: AtomicUsize::new(0),
            batch: AtomicUsize::new(1),
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            panic: Mutex::new(None),
            busy: Mutex::new(()),
            sleepers: AtomicUsize::new(0),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
            spawned: Mutex::new(0),
            active: AtomicUsize::new(0),
        }));
        t.resize(super::threads());
        t
    })
}

/// The team when it has helpers (without, every job runs on the caller).
fn team() -> Option<&'static Team> {
    let t = get();
    (t.active.load(SeqCst) > 0).then_some(t)
}

/// Makes `threads` threads (the caller and `threads - 1` helpers) take part
/// in jobs from now on (rumus.set_num_threads); helpers beyond sit them out.
pub fn resize(threads: usize) {
    get().resize(threads);
}

impl Team {
    fn resize(&'static self, threads: usize) {
        let want = threads.saturating_sub(1);
        let mut spawned = self.spawned.lock().unwrap_or_else(|e| e.into_inner());
        while *spawned < want {
            let i = *spawned;
            let started = std::thread::Builder::new()
                .name(format!("rumus-cpu-{}", i))
                .spawn(move || self.helper(i));
            if started.is_err() {
                break;
            }
            *spawned += 1;
        }
        self.active.store(want.min(*spawned), SeqCst);
    }

    /// Claims and runs batches of tasks of the open job until none is left.
    fn work(&self, f: Task) {
        let (n, batch) = (self.n.load(SeqCst), self.batch.load(SeqCst));
        loop {
            let start = self.next.fetch_add(1, SeqCst).saturating_mul(batch);
            if start >= n {
                return;
            }
            let end = (start + batch).min(n);
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| (start..end).for_each(f))) {
                self.panic.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(p);
            }
            self.done.fetch_add(end - start, SeqCst);
        }
    }

    fn helper(&self, index: usize) {
        let mut seen = 0;
        loop {
            let start = Instant::now();
            let mut spins = 0u32;
            let e = loop {
                let e = self.epoch.load(SeqCst);
                if e != seen && e % 2 == 1 && index < self.active.load(SeqCst) {
                    break e;
                }
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(256) && start.elapsed() > SPIN {
                    let guard = self.sleep.lock().unwrap_or_else(|e| e.into_inner());
                    self.sleepers.fetch_add(1, SeqCst);
                    let e = self.epoch.load(SeqCst);
                    if e == seen || e.is_multiple_of(2) {
                        drop(self.wake.wait(guard).unwrap_or_else(|e| e.into_inner()));
                    }
                    self.sleepers.fetch_sub(1, SeqCst);
                    continue;
                }
                std::hint::spin_loop();
            };
            // Enter, then check the job is still open: the caller waits for
            // `inside` to drop to 0 after closing it, so the task stays alive.
            self.inside.fetch_add(1, SeqCst);
            if self.epoch.load(SeqCst) == e {
                // SAFETY: the job is open, so `task` points to a live `Task`.
                let f: Task = unsafe { *(self.task.load(SeqCst) as *const Task) };
                self.work(f);
            }
            self.inside.fetch_sub(1, SeqCst);
            seen = e;
        }
    }
}

/// Runs `f(0) .. f(n - 1)`, each exactly once, split over the team.
pub fn for_each(n: usize, f: impl Fn(usize) + Sync) {
    let team = match team() {
        Some(t) if n > 1 && super::threads() > 1 => t,
        _ => return (0..n).for_each(f),
    };
    let Ok(_busy) = team.busy.try_lock() else {
        return (0..n).for_each(f);
    };
    let task: Task = &f;
    team.n.store(n, SeqCst);
    // Eight batches per thread: small tasks (a softmax row) cost one claim
    // per batch, and the last batches still even out the threads' loads.
    team.batch.store((n / (8 * super::threads())).max(1), SeqCst);
    team.next.store(0, SeqCst);
    team.done.store(0, SeqCst);
    team.task.store(&task as *const Task as *mut (), SeqCst);
    team.epoch.fetch_add(1, SeqCst);
    if team.sleepers.load(SeqCst) > 0 {
        let _g = team.sleep.lock().unwrap_or_else(|e| e.into_inner());
        team.wake.notify_all();
    }
    team.work(task);
    while team.done.load(SeqCst) < n {
        std::hint::spin_loop();
    }
    team.epoch.fetch_add(1, SeqCst);
    while team.inside.load(SeqCst) > 0 {
        std::hint::spin_loop();
    }
    if let Some(p) = team.panic.lock().unwrap_or_else(|e| e.into_inner()).take() {
        resume_unwind(p);
    }
}

/// `f(0) .. f(n - 1)` computed over the team, in order.
pub fn map<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let slots: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    for_each(n, |i| *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(f(i)));
    slots
        .into_iter()
        .map(|s| s.into_inner().unwrap_or_else(|e| e.into_inner()).expect("every task ran"))
        .collect()
}

/// `for_each` when `work` elements are worth the team, else a plain loop.
pub fn for_each_if(work: usize, n: usize, f: impl Fn(usize) + Sync) {
    if super::parallel(work) {
        for_each(n, f)
    } else {
        (0..n).for_each(f)
    }
}

/// Rows of `len` elements handed out in a few contiguous chunks per thread.
pub fn for_rows(rows: usize, len: usize, f: impl Fn(usize) + Sync) {
    let chunks = rows.min(super::threads() * 8).max(1);
    for_each_if(rows * len, chunks, |c| {
        (c * rows / chunks..(c + 1) * rows / chunks).for_each(&f);
    });
}
