//! A small persistent thread team whose workers spin between jobs, for decode-time matrix
//! products: a decode step issues ~100 short parallel dispatches, and waking a sleeping worker
//! (futex) costs more than many of those dispatches take. Workers busy-wait for the next job
//! (as ggml's thread pool does) and park only after `SPIN_FOR` of idleness.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Idle time after which a worker parks instead of spinning (costs a futex wake later).
const SPIN_FOR: Duration = Duration::from_millis(2);

/// Spins of the dispatching thread waiting for its workers before it starts yielding the core
/// (some tens of microseconds).
const YIELD_AFTER_SPINS: u32 = 1 << 10;

/// A job: called as `f(part, n_parts)` on every member of the team.
type Job = dyn Fn(usize, usize) + Sync;

struct Shared {
    generation: AtomicU64,
    /// The generation whose job is open to workers (0: none).
    open: AtomicU64,
    /// Next part to claim, and parts finished, of the open job.
    next: AtomicUsize,
    done: AtomicUsize,
    /// Workers inside the current job (registered while it was open).
    active: AtomicUsize,
    /// The current job, valid while it is open or `active > 0` (see `run`).
    job: Mutex<Option<&'static Job>>,
    panicked: AtomicBool,
    shutdown: AtomicBool,
    sleeping: AtomicUsize,
    park: Mutex<()>,
    wake: Condvar,
}

/// A team of `n` members: the calling thread plus `n - 1` spinning workers.
pub struct SpinPool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    /// Serialises `run` calls from different threads.
    dispatch: Mutex<()>,
}

impl SpinPool {
    /// A team of `n` (at least 1) members.
    pub fn new(n: usize) -> std::io::Result<SpinPool> {
        let shared = Arc::new(Shared {
            generation: AtomicU64::new(0),
            open: AtomicU64::new(0),
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            job: Mutex::new(None),
            panicked: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            sleeping: AtomicUsize::new(0),
            park: Mutex::new(()),
            wake: Condvar::new(),
        });
        let mut pool = SpinPool {
            shared: Arc::clone(&shared),
            workers: Vec::new(),
            dispatch: Mutex::new(()),
        };
        for part in 1..n.max(1) {
            let s = Arc::clone(&shared);
            // On error, dropping `pool` stops the workers already started.
            pool.workers.push(
                std::thread::Builder::new()
                    .name(format!("muser-spin-{part}"))
                    .spawn(move || worker(&s, n))?,
            );
        }
        Ok(pool)
    }

    /// Runs `f(i)` for every `i < n_items`, the items split into contiguous shares.
    pub fn for_each(&self, n_items: usize, f: &(dyn Fn(usize) + Sync)) {
        self.run(&|part, n| {
            for i in n_items * part / n..n_items * (part + 1) / n {
                f(i);
            }
        });
    }

    /// Members of the team.
    pub fn size(&self) -> usize {
        self.workers.len() + 1
    }

    /// Runs `f(part, n)` for every `part < n` (part 0 on the calling thread, the others on
    /// whichever member claims them first) and returns when
    /// all have finished. A panic in any part is re-raised here.
    pub fn run<'a>(&self, f: &'a (dyn Fn(usize, usize) + Sync + 'a)) {
        let n = self.size();
        if n == 1 {
            f(0, 1);
            return;
        }
        let id = Arc::as_ptr(&self.shared) as usize;
        assert!(
            IN_JOB.with(|c| c.get()) != id,
            "SpinPool::run called from inside a job of the same pool (it would deadlock)"
        );
        let _one_at_a_time = self.dispatch.lock().unwrap_or_else(|e| e.into_inner());
        let s = &self.shared;
        // SAFETY: workers use the reference only while registered in `active` for a job that
        // was open when they registered; this function closes the job and waits for `active`
        // to reach zero before it returns (it does not unwind before that: every part runs
        // under catch_unwind), and clears the slot, so `f` outlives every use.
        let job: &'static Job = unsafe {
            std::mem::transmute::<&'a (dyn Fn(usize, usize) + Sync + 'a), &'static Job>(f)
        };
        *s.job.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
        s.next.store(1, SeqCst);
        s.done.store(0, SeqCst);
        let generation = s.generation.load(SeqCst) + 1;
        s.open.store(generation, SeqCst);
        s.generation.store(generation, SeqCst);
        if s.sleeping.load(SeqCst) > 0 {
            let _g = s.park.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_all();
        }
        // Part 0 here, then any part no worker has claimed yet: a worker the OS has not
        // scheduled (on a busy machine) delays nothing it has not started.
        let mut first_panic = None;
        let mut part = 0;
        while part < n {
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| in_job(id, || f(part, n)))) {
                match first_panic {
                    None => first_panic = Some(p),
                    // Dropping a payload may itself panic: keep this function from unwinding
                    // before the workers are out of the job.
                    Some(_) => std::mem::forget(p),
                }
            }
            s.done.fetch_add(1, SeqCst);
            part = s.next.fetch_add(1, SeqCst);
        }
        wait_until(|| s.done.load(SeqCst) == n);
        s.open.store(0, SeqCst);
        wait_until(|| s.active.load(SeqCst) == 0);
        *s.job.lock().unwrap_or_else(|e| e.into_inner()) = None;
        // Clear the workers' flag before re-raising anything, so the next job starts clean.
        let worker_panicked = s.panicked.swap(false, SeqCst);
        if let Some(p) = first_panic {
            std::panic::resume_unwind(p);
        }
        if worker_panicked {
            panic!("a spin-pool worker panicked");
        }
    }
}

thread_local! {
    /// The pool (its `Shared` address) whose job this thread is running, if any.
    static IN_JOB: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Runs `f` marked as inside a job of the pool whose `Shared` is at `id`; `run` on the same
/// pool from inside would deadlock (on `dispatch`, or waiting for itself), so it panics
/// instead.
fn in_job<R>(id: usize, f: impl FnOnce() -> R) -> R {
    let outer = IN_JOB.with(|c| c.replace(id));
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_JOB.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(outer);
    f()
}

/// Spins briefly, then yields until `ready()`: on a busy machine the thread being waited for
/// may need this very core.
fn wait_until(ready: impl Fn() -> bool) {
    let mut spins = 0u32;
    while !ready() {
        spins = spins.saturating_add(1);
        if spins < YIELD_AFTER_SPINS {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

fn worker(s: &Shared, n: usize) {
    let mut seen = 0u64;
    loop {
        let idle_since = Instant::now();
        let mut spins = 0u32;
        loop {
            if s.shutdown.load(SeqCst) {
                return;
            }
            let g = s.generation.load(SeqCst);
            if g != seen {
                seen = g;
                break;
            }
            spins = spins.wrapping_add(1);
            if spins % 1024 == 0 && idle_since.elapsed() > SPIN_FOR {
                let mut guard = s.park.lock().unwrap_or_else(|e| e.into_inner());
                s.sleeping.fetch_add(1, SeqCst);
                while s.generation.load(SeqCst) == seen && !s.shutdown.load(SeqCst) {
                    guard = s
                        .wake
                        .wait_timeout(guard, Duration::from_millis(100))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                s.sleeping.fetch_sub(1, SeqCst);
            } else {
                std::hint::spin_loop();
            }
        }
        // Register, then check that this generation's job is still open (both SeqCst: either
        // `run` sees this registration before it clears the job, or this sees it closed).
        s.active.fetch_add(1, SeqCst);
        if s.open.load(SeqCst) == seen {
            let job = *s.job.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(job) = job {
                loop {
                    let part = s.next.fetch_add(1, SeqCst);
                    if part >= n {
                        break;
                    }
                    let id = s as *const Shared as usize;
                    if let Err(p) = catch_unwind(AssertUnwindSafe(|| in_job(id, || job(part, n)))) {
                        s.panicked.store(true, SeqCst);
                        // A payload whose drop panics must not kill this worker mid-job.
                        std::mem::forget(p);
                    }
                    s.done.fetch_add(1, SeqCst);
                }
            }
        }
        s.active.fetch_sub(1, SeqCst);
    }
}

impl Drop for SpinPool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, SeqCst);
        {
            let _g = self.shared.park.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.wake.notify_all();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_runs_once_per_job() {
        // Never more members than cores in real use: spinning on an oversubscribed machine
        // only burns time. Two members keep this test fast on CI's two cores.
        let pool = SpinPool::new(2).unwrap();
        let hits: Vec<AtomicUsize> = (0..2).map(|_| AtomicUsize::new(0)).collect();
        for _ in 0..1000 {
            pool.run(&|part, n| {
                assert_eq!(n, 2);
                hits[part].fetch_add(1, SeqCst);
            });
        }
        assert!(hits.iter().all(|h| h.load(SeqCst) == 1000));
        // After parking, jobs still run.
        std::thread::sleep(SPIN_FOR * 3);
        pool.run(&|part, _| {
            hits[part].fetch_add(1, SeqCst);
        });
        assert!(hits.iter().all(|h| h.load(SeqCst) == 1001));
        let three = SpinPool::new(3).unwrap();
        let count = AtomicUsize::new(0);
        three.run(&|_, _| {
            count.fetch_add(1, SeqCst);
        });
        assert_eq!(count.load(SeqCst), 3);
    }

    /// Parts panicking on the caller and on a worker in one job: the job panics, and the next
    /// one runs clean (the workers' flag does not leak into it).
    #[test]
    fn a_job_after_panics_everywhere_runs_clean() {
        let pool = SpinPool::new(2).unwrap();
        for _ in 0..20 {
            let r = catch_unwind(AssertUnwindSafe(|| {
                pool.run(&|part, _| {
                    if part == 0 {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    panic!("part {part}");
                })
            }));
            assert!(r.is_err());
            pool.run(&|_, _| {});
        }
    }

    /// `run` from inside a job of the same pool panics instead of deadlocking.
    #[test]
    fn nested_runs_fail_loudly() {
        let pool = SpinPool::new(2).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.run(&|_, _| pool.run(&|_, _| {}));
        }));
        let msg = r.unwrap_err();
        let text = msg
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| msg.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        assert!(
            text.contains("inside a job") || text.contains("worker panicked"),
            "{text}"
        );
        let other = SpinPool::new(2).unwrap();
        let count = AtomicUsize::new(0);
        pool.run(&|_, _| {
            other.run(&|_, _| {
                count.fetch_add(1, SeqCst);
            })
        });
        assert_eq!(count.load(SeqCst), 4);
    }

    #[test]
    fn panics_propagate_and_the_pool_survives() {
        let pool = SpinPool::new(2).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.run(&|part, _| {
                if part == 1 {
                    panic!("boom");
                }
            })
        }));
        assert!(r.is_err());
        let count = AtomicUsize::new(0);
        pool.run(&|_, _| {
            count.fetch_add(1, SeqCst);
        });
        assert_eq!(count.load(SeqCst), 2);
        let single = SpinPool::new(1).unwrap();
        single.run(&|p, n| assert_eq!((p, n), (0, 1)));
    }
}
