//! The engine-side scheduler: one thread owns the model and steps every running sequence in
//! one batched forward (continuous batching), or, on a GPU, each sequence's whole-token
//! session in turn, interleaving chunked prefill so that a decoder never waits behind a long
//! prompt; a bounded queue gives backpressure.

mod each;
mod rate;
mod run;
mod slot;

pub use each::{HostSequences, SequenceSource};
pub use rate::decode_rate;

/// How the scheduler thread runs its sequences.
pub enum Runner {
    /// Host KV caches, every running sequence's rows in one batched forward on the model's
    /// backend.
    Batched,
    /// One sequence each from the source (`Arc<Cuda>`: whole-token GPU sessions), fed one
    /// after another: decoders first, then prompt chunks.
    OneByOne(Box<dyn SequenceSource>),
}

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::model::Glimmer;
use crate::sampling::SamplingParams;

/// Limits of a scheduler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// Positions per sequence (prompt + generated).
    pub context: usize,
    /// Sequences decoded together.
    pub max_sequences: usize,
    /// Requests waiting for a slot before new ones are refused.
    pub queue_size: usize,
    /// Prompt rows per step while no sequence is decoding.
    pub prefill_chunk: usize,
    /// Prompt rows per step while sequences are decoding (they wait for the step).
    pub prefill_chunk_busy: usize,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            context: 4096,
            max_sequences: 8,
            queue_size: 64,
            prefill_chunk: 512,
            prefill_chunk_busy: 64,
        }
    }
}

/// Log-probabilities at one generated position (of the model's distribution after scale and
/// softcap, before any sampling transform).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprobs {
    pub logprob: f32,
    /// The most probable tokens, best first.
    pub top: Vec<(u32, f32)>,
}

/// Why a sequence stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// A stop token was sampled (not emitted).
    Stop,
    /// `max_tokens` generated.
    Length,
    /// The sequence's context is full.
    Context,
}

/// What a sequence reports to its client, in order: tokens, then one `Done` or `Failed`.
#[derive(Debug, Clone, PartialEq)]
pub enum SeqEvent {
    Token {
        id: u32,
        logprobs: Option<TokenLogprobs>,
    },
    Done {
        reason: FinishReason,
        prompt_tokens: usize,
        completion_tokens: usize,
    },
    Failed(String),
}

/// Where a sequence's events go. `send` returns false when the client has gone away; the
/// scheduler then ends the sequence and frees its KV.
pub trait EventSink: Send {
    fn send(&mut self, ev: SeqEvent) -> bool;
    /// True once the client has gone (checked every step, also during prefill).
    fn is_closed(&self) -> bool;
}

/// A sink that sends `(tag, event)` into a standard channel (benchmarks, tools): several
/// sequences can share one receiver. A departed receiver shows at the next `send`.
pub struct TaggedSink {
    pub tag: usize,
    pub tx: std::sync::mpsc::Sender<(usize, SeqEvent)>,
}

impl EventSink for TaggedSink {
    fn send(&mut self, ev: SeqEvent) -> bool {
        self.tx.send((self.tag, ev)).is_ok()
    }

    fn is_closed(&self) -> bool {
        false
    }
}

/// Restricts which tokens may be sampled (constrained decoding, e.g. JSON mode).
pub trait TokenConstraint: Send {
    /// Whether `token` may come next.
    fn allows(&self, token: u32) -> bool;
    /// `token` was sampled.
    fn accept(&mut self, token: u32);
}

/// One generation request.
pub struct Request {
    pub prompt: Vec<u32>,
    pub sampling: SamplingParams,
    /// Most tokens to generate.
    pub max_tokens: usize,
    /// Tokens that end the sequence (not emitted).
    pub stop_tokens: Vec<u32>,
    /// `Some(n)`: report each token's log-probability and the `n` most probable.
    pub logprobs: Option<usize>,
    /// Tokens outside the constraint are never sampled.
    pub constraint: Option<Box<dyn TokenConstraint>>,
    pub sink: Box<dyn EventSink>,
}

/// Why a request was not queued.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SubmitError {
    #[error("the request queue is full ({0} waiting)")]
    QueueFull(usize),
    #[error("the prompt has {prompt} tokens; with one generated token it does not fit in the context of {context}")]
    PromptTooLong { prompt: usize, context: usize },
    #[error("the prompt is empty")]
    EmptyPrompt,
    #[error("token id {id} is outside the model's vocabulary ({n_vocab} tokens)")]
    TokenOutOfRange { id: u32, n_vocab: usize },
    #[error("invalid sampling parameters: {0}")]
    Sampling(String),
    #[error("the scheduler has stopped")]
    Stopped,
}

/// Live counters, read by the metrics endpoint.
#[derive(Debug, Default)]
pub struct SchedStats {
    pub queue_depth: AtomicU64,
    pub running: AtomicU64,
    /// Cached positions over all running sequences.
    pub kv_positions: AtomicU64,
    /// Bytes held by running sequences' KV caches.
    pub kv_bytes: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub generated_tokens: AtomicU64,
    pub steps: AtomicU64,
    /// Rows in all steps (divide by `steps` for the mean batch).
    pub step_rows: AtomicU64,
    /// Sequences that ended, for any reason (cancellations included).
    pub finished: AtomicU64,
    pub cancelled: AtomicU64,
}

impl SchedStats {
    pub fn get(v: &AtomicU64) -> u64 {
        v.load(Ordering::Relaxed)
    }
}

struct Shared {
    queue: Mutex<VecDeque<Request>>,
    wake: Condvar,
    stop: AtomicBool,
    stats: SchedStats,
}

/// Handle to the scheduler thread. Dropping it stops the thread after the current step.
pub struct Scheduler {
    shared: Arc<Shared>,
    cfg: SchedulerConfig,
    n_vocab: usize,
    thread: Option<JoinHandle<()>>,
}

impl Scheduler {
    /// Starts the scheduler thread for `model` with the batched runner.
    pub fn start(model: Arc<Glimmer>, cfg: SchedulerConfig) -> std::io::Result<Scheduler> {
        Scheduler::start_with(model, cfg, Runner::Batched)
    }

    /// Starts the scheduler thread for `model` with `runner`.
    pub fn start_with(
        model: Arc<Glimmer>,
        cfg: SchedulerConfig,
        runner: Runner,
    ) -> std::io::Result<Scheduler> {
        let mut cfg = cfg;
        cfg.context = cfg.context.clamp(2, model.cfg.context_length.max(2));
        cfg.max_sequences = cfg.max_sequences.max(1);
        cfg.prefill_chunk = cfg.prefill_chunk.max(1);
        cfg.prefill_chunk_busy = cfg.prefill_chunk_busy.clamp(1, cfg.prefill_chunk);
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            stats: SchedStats::default(),
        });
        let n_vocab = model.cfg.n_vocab;
        let thread = {
            let shared = shared.clone();
            let cfg = cfg.clone();
            std::thread::Builder::new()
                .name("muser-scheduler".into())
                .spawn(move || match runner {
                    Runner::Batched => run::run(&model, &cfg, &shared),
                    Runner::OneByOne(source) => each::run(&model, &*source, &cfg, &shared),
                })?
        };
        Ok(Scheduler {
            shared,
            cfg,
            n_vocab,
            thread: Some(thread),
        })
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &SchedStats {
        &self.shared.stats
    }

    /// Checks a request without queueing it.
    pub fn check(&self, prompt_len: usize, sampling: &SamplingParams) -> Result<(), SubmitError> {
        if prompt_len == 0 {
            return Err(SubmitError::EmptyPrompt);
        }
        if prompt_len + 1 > self.cfg.context {
            return Err(SubmitError::PromptTooLong {
                prompt: prompt_len,
                context: self.cfg.context,
            });
        }
        sampling
            .validate()
            .map_err(|e| SubmitError::Sampling(e.to_string()))
    }

    /// Whether the scheduler thread is still running.
    pub fn is_running(&self) -> bool {
        !self.shared.stop.load(Ordering::Acquire) && !self.thread_finished()
    }

    /// Queues a request, or refuses it at once (queue full, prompt too long, a token outside
    /// the vocabulary, stopped).
    pub fn submit(&self, req: Request) -> Result<(), SubmitError> {
        self.check(req.prompt.len(), &req.sampling)?;
        if let Some(&id) = req.prompt.iter().find(|&&t| t as usize >= self.n_vocab) {
            return Err(SubmitError::TokenOutOfRange {
                id,
                n_vocab: self.n_vocab,
            });
        }
        if self.shared.stop.load(Ordering::Acquire) || self.thread_finished() {
            return Err(SubmitError::Stopped);
        }
        let mut q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        // Requests whose clients already left do not hold places.
        q.retain(|r| !r.sink.is_closed());
        if q.len() >= self.cfg.queue_size {
            return Err(SubmitError::QueueFull(q.len()));
        }
        q.push_back(req);
        self.shared
            .stats
            .queue_depth
            .store(q.len() as u64, Ordering::Relaxed);
        drop(q);
        self.shared.wake.notify_one();
        Ok(())
    }

    fn thread_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
