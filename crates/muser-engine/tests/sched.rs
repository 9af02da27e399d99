//! Batched forward and the scheduler on a small synthetic model: rows computed in a batch equal
//! their solo runs bit for bit, the same seed gives the same tokens alone or batched, prompts
//! are chunked without stalling decoders, clients that leave free their KV, the queue is bounded;
//! the one-by-one runner (the GPU's: a sequence each) gives the batched runner's tokens, and a
//! sequence that fails ends alone.

use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use muser_engine::sched::{
    EventSink, FinishReason, HostSequences, Request, Runner, Scheduler, SchedulerConfig, SeqEvent,
    SequenceSource, SubmitError, TaggedSink,
};
use muser_engine::{
    Cpu, Glimmer, HostSequence, KvCache, LogitsFor, SamplingParams, Segment, Sequence, SplitPolicy,
};
use muser_synth::{Preset, SynthConfig};

fn model_path() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("muser-engine-sched-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("small.gguf");
    if !p.exists() {
        let mut c = SynthConfig::preset(Preset::Tiny);
        c.n_layer = 3;
        c.sliding_window = 6;
        c.n_vocab_text = 400;
        let tmp = dir.join(format!("small-{:?}.tmp", std::thread::current().id()));
        muser_synth::write_model(&c, &tmp, &|_, _| {}).unwrap();
        std::fs::rename(&tmp, &p).unwrap();
    }
    p
}

fn model(threads: usize) -> Glimmer {
    Glimmer::open(model_path(), Box::new(Cpu::new(Some(threads)).unwrap())).unwrap()
}

/// One-token decode segments over `caches`.
fn segs_of(caches: &mut [KvCache]) -> Vec<Segment<'_>> {
    caches
        .iter_mut()
        .map(|kv| Segment {
            kv,
            tokens: &[1],
            want: LogitsFor::Last,
        })
        .collect()
}

fn prompt(seed: u32, n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| (seed * 131 + i * 17) % 400).collect()
}

#[test]
fn batched_rows_equal_solo_rows_bit_for_bit() {
    let m = model(2);
    let (pa, pb, pc) = (prompt(1, 9), prompt(2, 14), prompt(3, 3));
    // Solo: each sequence's prompt, then one decode token.
    let solo = |p: &[u32], next: u32| {
        let mut kv = m.new_cache(64, 0);
        let a = m.forward(&mut kv, p, LogitsFor::All).unwrap();
        let b = m.forward(&mut kv, &[next], LogitsFor::Last).unwrap();
        (a, b)
    };
    let (sa, sa1) = solo(&pa, 5);
    let (sb, sb1) = solo(&pb, 6);
    let (sc, sc1) = solo(&pc, 7);
    // Batched: all three prompts in one pass (one wants every row), then three decodes.
    let (mut ka, mut kb, mut kc) = (m.new_cache(64, 0), m.new_cache(64, 0), m.new_cache(64, 0));
    let v = m.cfg.n_vocab;
    let out = m
        .forward_batch(&mut [
            Segment {
                kv: &mut ka,
                tokens: &pa,
                want: LogitsFor::All,
            },
            Segment {
                kv: &mut kb,
                tokens: &pb,
                want: LogitsFor::Last,
            },
            Segment {
                kv: &mut kc,
                tokens: &pc,
                want: LogitsFor::Last,
            },
        ])
        .unwrap();
    assert_eq!(out.len(), (pa.len() + 2) * v);
    assert_eq!(&out[..pa.len() * v], &sa[..], "all rows of segment 0");
    assert_eq!(
        &out[pa.len() * v..(pa.len() + 1) * v],
        &sb[(pb.len() - 1) * v..]
    );
    assert_eq!(&out[(pa.len() + 1) * v..], &sc[(pc.len() - 1) * v..]);
    let out = m
        .forward_batch(&mut [
            Segment {
                kv: &mut kc,
                tokens: &[7],
                want: LogitsFor::Last,
            },
            Segment {
                kv: &mut ka,
                tokens: &[5],
                want: LogitsFor::Last,
            },
            Segment {
                kv: &mut kb,
                tokens: &[6],
                want: LogitsFor::Last,
            },
        ])
        .unwrap();
    assert_eq!(&out[..v], &sc1[..]);
    assert_eq!(&out[v..2 * v], &sa1[..]);
    assert_eq!(&out[2 * v..], &sb1[..]);
}

/// A decode batch of a small model runs split across the threads (each thread its own share
/// of sequences, on the serial twin): every row equals its solo run, for even and uneven
/// shares, rings that wrapped (prompts past the 32-row window) included.
#[test]
fn split_decode_batches_equal_solo_rows_bit_for_bit() {
    // One-row groups (2, 2), groups = threads (2, 4; 3, 7), more groups than threads (2, 9),
    // fewer sequences than threads (4, 2; 4, 3).
    let cases = [(2, 2), (2, 4), (2, 5), (3, 7), (2, 9), (4, 2), (4, 3)];
    for (threads, n_seq) in cases {
        let m = model(threads);
        let prompts: Vec<Vec<u32>> = (0..n_seq)
            .map(|i| prompt(i as u32 + 1, 3 + 7 * i))
            .collect();
        let steps: [Vec<u32>; 2] = [
            (0..n_seq as u32).map(|i| 5 + i).collect(),
            (0..n_seq as u32).map(|i| 300 + 3 * i).collect(),
        ];
        let v = m.cfg.n_vocab;
        let mut solo = Vec::new();
        for (i, p) in prompts.iter().enumerate() {
            let mut kv = m.new_cache(128, 0);
            m.forward(&mut kv, p, LogitsFor::Last).unwrap();
            let mut rows = Vec::new();
            for s in &steps {
                rows.push(m.forward(&mut kv, &[s[i]], LogitsFor::Last).unwrap());
            }
            solo.push(rows);
        }
        let mut caches: Vec<_> = prompts.iter().map(|_| m.new_cache(128, 0)).collect();
        for (kv, p) in caches.iter_mut().zip(&prompts) {
            m.forward(kv, p, LogitsFor::Last).unwrap();
        }
        for (k, s) in steps.iter().enumerate() {
            let tokens: Vec<[u32; 1]> = s.iter().map(|&t| [t]).collect();
            let mut segs: Vec<Segment<'_>> = caches
                .iter_mut()
                .zip(&tokens)
                .map(|(kv, t)| Segment {
                    kv,
                    tokens: t,
                    want: LogitsFor::Last,
                })
                .collect();
            assert!(
                m.splits_batch(&segs),
                "{threads} threads, {n_seq} sequences"
            );
            let out = m.forward_batch(&mut segs).unwrap();
            assert_eq!(out.len(), n_seq * v);
            for (i, rows) in solo.iter().enumerate() {
                assert!(
                    out[i * v..(i + 1) * v] == rows[k][..],
                    "{threads} threads, {n_seq} sequences: sequence {i}, step {k}"
                );
            }
        }
    }
    // Not split: prompts (several tokens), one row or none, one thread, the policy says never.
    let mut m = model(2);
    let mut kv: Vec<_> = (0..4).map(|_| m.new_cache(16, 0)).collect();
    let segs: Vec<Segment<'_>> = kv
        .iter_mut()
        .map(|kv| Segment {
            kv,
            tokens: &[1, 2],
            want: LogitsFor::Last,
        })
        .collect();
    assert!(!m.splits_batch(&segs));
    assert!(!m.splits_batch(&segs[..0]));
    drop(segs);
    let segs = segs_of(&mut kv);
    assert!(m.splits_batch(&segs));
    assert!(!m.splits_batch(&segs[..1]));
    m.set_split_policy(SplitPolicy::Never);
    assert!(!m.splits_batch(&segs));
    drop(segs);
    let four = model(4);
    assert!(four.splits_batch(&segs_of(&mut kv[..2])));
    let one = model(1);
    let mut kv: Vec<_> = (0..4).map(|_| one.new_cache(16, 0)).collect();
    assert!(!one.splits_batch(&segs_of(&mut kv)));
}

/// The split by model size: a model of at most `SPLIT_MAX_WEIGHT_BYTES` per token is split
/// from two sequences up, also with fewer sequences than threads; a larger one never.
#[test]
fn split_policy_follows_model_size() {
    let dir = std::env::temp_dir().join(format!("muser-engine-split-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let open = |name: &str, layers: u32, threads: usize| {
        let mut c = SynthConfig::preset(Preset::Tiny);
        (c.n_embd, c.n_head, c.n_ff, c.n_layer) = (512, 8, 1024, layers);
        let p = dir.join(name);
        muser_synth::write_model(&c, &p, &|_, _| {}).unwrap();
        Glimmer::open(&p, Box::new(Cpu::new(Some(threads)).unwrap())).unwrap()
    };
    let mid = open("mid.gguf", 4, 4);
    assert!(mid.weights.decode_bytes() <= muser_engine::SPLIT_MAX_WEIGHT_BYTES);
    let mut kv: Vec<_> = (0..4).map(|_| mid.new_cache(8, 0)).collect();
    assert!(mid.splits_batch(&segs_of(&mut kv[..2])));
    assert!(!mid.splits_batch(&segs_of(&mut kv[..1])));
    let big = open("big.gguf", 12, 2);
    assert!(big.weights.decode_bytes() > muser_engine::SPLIT_MAX_WEIGHT_BYTES);
    let mut kv: Vec<_> = (0..4).map(|_| big.new_cache(8, 0)).collect();
    assert!(!big.splits_batch(&segs_of(&mut kv)));
    std::fs::remove_dir_all(&dir).ok();
}

/// A split-eligible decode batch with one full cache is refused before any cache moves.
#[test]
fn a_refused_split_batch_changes_no_cache() {
    let m = model(2);
    let mut caches: Vec<_> = (0..4)
        .map(|i| m.new_cache(if i == 2 { 3 } else { 64 }, 0))
        .collect();
    for kv in caches.iter_mut() {
        m.forward(kv, &prompt(1, 3), LogitsFor::Last).unwrap();
    }
    let mut segs: Vec<Segment<'_>> = caches
        .iter_mut()
        .map(|kv| Segment {
            kv,
            tokens: &[9],
            want: LogitsFor::Last,
        })
        .collect();
    assert!(m.splits_batch(&segs));
    let err = m.forward_batch(&mut segs).unwrap_err();
    assert!(err.to_string().contains("capacity of 3"), "{err}");
    drop(segs);
    assert!(caches.iter().all(|kv| kv.len() == 3));
}

#[test]
fn a_refused_batch_changes_no_cache() {
    let m = model(1);
    let (mut ka, mut kb) = (m.new_cache(64, 0), m.new_cache(8, 0));
    let err = m
        .forward_batch(&mut [
            Segment {
                kv: &mut ka,
                tokens: &prompt(1, 5),
                want: LogitsFor::Last,
            },
            Segment {
                kv: &mut kb,
                tokens: &prompt(2, 9),
                want: LogitsFor::Last,
            },
        ])
        .unwrap_err();
    assert!(err.to_string().contains("capacity of 8"), "{err}");
    assert_eq!((ka.len(), kb.len()), (0, 0));
    let err = m
        .forward_batch(&mut [Segment {
            kv: &mut ka,
            tokens: &[1, 99_999],
            want: LogitsFor::Last,
        }])
        .unwrap_err();
    assert!(err.to_string().contains("99999"), "{err}");
    assert_eq!(ka.len(), 0);
}

/// Collects events on a channel; `close_after` tokens, it reports the client gone.
struct Sink {
    tx: mpsc::Sender<SeqEvent>,
    close_after: Option<usize>,
    seen: usize,
}

impl EventSink for Sink {
    fn send(&mut self, ev: SeqEvent) -> bool {
        self.seen += 1;
        let _ = self.tx.send(ev);
        !self.is_closed()
    }
    fn is_closed(&self) -> bool {
        self.close_after.is_some_and(|n| self.seen >= n)
    }
}

fn request(
    p: Vec<u32>,
    seed: u64,
    max: usize,
    close_after: Option<usize>,
) -> (Request, mpsc::Receiver<SeqEvent>) {
    let (tx, rx) = mpsc::channel();
    let sampling = SamplingParams {
        seed,
        temperature: 0.9,
        top_k: 40,
        ..SamplingParams::default()
    };
    let req = Request {
        prompt: p,
        sampling,
        max_tokens: max,
        stop_tokens: vec![],
        logprobs: Some(2),
        constraint: None,
        sink: Box::new(Sink {
            tx,
            close_after,
            seen: 0,
        }),
    };
    (req, rx)
}

/// Tokens with their log-probabilities, then the finish reason.
fn collect(rx: &mpsc::Receiver<SeqEvent>) -> Outcome {
    let mut toks = Vec::new();
    loop {
        match rx
            .recv_timeout(Duration::from_secs(60))
            .expect("scheduler event")
        {
            SeqEvent::Token { id, logprobs } => toks.push((id, logprobs.unwrap().logprob)),
            SeqEvent::Done {
                reason,
                completion_tokens,
                ..
            } => {
                assert_eq!(completion_tokens, toks.len());
                return (toks, Some(reason));
            }
            SeqEvent::Failed(m) => panic!("failed: {m}"),
        }
    }
}

/// Waits up to 5 s for `done` (the scheduler stores its counters after the events go out).
fn settle(done: impl Fn() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn cfg(max_sequences: usize) -> SchedulerConfig {
    SchedulerConfig {
        context: 96,
        max_sequences,
        queue_size: 16,
        prefill_chunk: 16,
        prefill_chunk_busy: 4,
    }
}

#[test]
fn batched_sequences_give_their_solo_tokens() {
    let m = Arc::new(model(2));
    let prompts: Vec<Vec<u32>> = (0..5).map(|i| prompt(i + 1, 3 + 11 * i as usize)).collect();
    let solo: Vec<_> = {
        let s = Scheduler::start(m.clone(), cfg(1)).unwrap();
        prompts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let (req, rx) = request(p.clone(), i as u64, 12, None);
                s.submit(req).unwrap();
                collect(&rx)
            })
            .collect()
    };
    let s = Scheduler::start(m.clone(), cfg(4)).unwrap();
    for (i, got) in run_all(&s, &prompts).into_iter().enumerate() {
        assert_eq!(got, solo[i], "sequence {i}");
        assert_eq!(got.1, Some(FinishReason::Length));
        assert_eq!(got.0.len(), 12);
    }
    let st = s.stats();
    // Five sequences over four slots: more rows than steps means steps were batched.
    let (steps, rows) = (
        st.steps.load(std::sync::atomic::Ordering::Relaxed),
        st.step_rows.load(std::sync::atomic::Ordering::Relaxed),
    );
    assert!(rows > steps + 10, "rows {rows} steps {steps}");
}

#[test]
fn context_end_cancellation_and_queue_limits() {
    let m = Arc::new(model(1));
    let s = Scheduler::start(m.clone(), cfg(2)).unwrap();
    // Prompt of 90 in a context of 96: tokens until the cache is full.
    let (req, rx) = request(prompt(4, 90), 1, 100, None);
    s.submit(req).unwrap();
    let (toks, reason) = collect(&rx);
    assert_eq!(reason, Some(FinishReason::Context));
    assert_eq!(toks.len(), 96 - 90 + 1);
    // Too long, empty, bad sampling: refused before queueing.
    let (req, _) = request(prompt(4, 96), 1, 4, None);
    assert_eq!(
        s.submit(req),
        Err(SubmitError::PromptTooLong {
            prompt: 96,
            context: 96
        })
    );
    let (req, _) = request(vec![], 1, 4, None);
    assert_eq!(s.submit(req), Err(SubmitError::EmptyPrompt));
    let (mut req, _) = request(prompt(1, 4), 1, 4, None);
    req.sampling.top_p = 0.0;
    assert!(matches!(s.submit(req), Err(SubmitError::Sampling(_))));
    // A client that leaves after 3 events: the sequence ends and its KV is freed.
    let (req, rx) = request(prompt(5, 20), 2, 50, Some(3));
    s.submit(req).unwrap();
    let mut n = 0;
    while let Ok(SeqEvent::Token { .. }) = rx.recv_timeout(Duration::from_secs(30)) {
        n += 1;
    }
    assert_eq!(n, 3);
    let st = s.stats();
    let relaxed = std::sync::atomic::Ordering::Relaxed;
    settle(|| st.running.load(relaxed) == 0 && st.kv_bytes.load(relaxed) == 0);
    assert_eq!(st.running.load(relaxed), 0);
    assert_eq!(st.kv_positions.load(relaxed), 0);
    assert_eq!(st.kv_bytes.load(relaxed), 0);
    assert!(st.cancelled.load(relaxed) >= 1);
    drop(s);
    // A queue of 2 behind one slot: the fourth request is refused while they wait.
    let tight = SchedulerConfig {
        queue_size: 2,
        max_sequences: 1,
        ..cfg(1)
    };
    let s = Scheduler::start(m, tight).unwrap();
    let mut held = Vec::new();
    let mut refused = 0;
    for i in 0..6 {
        let (req, rx) = request(prompt(i, 60), i as u64, 30, None);
        match s.submit(req) {
            Ok(()) => held.push(rx),
            Err(SubmitError::QueueFull(2)) => refused += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(refused >= 2, "refused {refused}");
    for rx in &held {
        assert_eq!(collect(rx).1, Some(FinishReason::Length));
    }
}

#[test]
fn a_long_prompt_does_not_stall_a_decoder() {
    let m = Arc::new(model(1));
    let s = Scheduler::start(m, cfg(2)).unwrap();
    // Both queued back to back, their events into one channel: its order is the order the
    // scheduler sent them in, so counting is by steps, not by how fast this thread reads.
    let (tx, rx) = mpsc::channel();
    let (mut short, _) = request(prompt(1, 4), 1, 40, None);
    let (mut long, _) = request(prompt(2, 80), 2, 2, None);
    short.sink = Box::new(TaggedSink {
        tag: 0,
        tx: tx.clone(),
    });
    long.sink = Box::new(TaggedSink { tag: 1, tx });
    s.submit(short).unwrap();
    s.submit(long).unwrap();
    // The long prompt is fed 4 rows per step once the short one decodes (at most 16 in the
    // first step, with nothing decoding): its first token cannot come before the decoder has
    // made ~16 more steps.
    let mut decoded_before_long = 0;
    let mut long_started = false;
    let (mut long_done, mut rest) = (false, 0);
    let mut short_done = None;
    while !(long_done && short_done.is_some()) {
        let (tag, ev) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        match (tag, ev) {
            (0, SeqEvent::Token { .. }) if !long_started => decoded_before_long += 1,
            (0, SeqEvent::Token { .. }) => rest += 1,
            (
                0,
                SeqEvent::Done {
                    completion_tokens, ..
                },
            ) => {
                assert!(
                    long_started,
                    "short sequence ended before the long one's first token"
                );
                short_done = Some(completion_tokens);
            }
            (1, SeqEvent::Token { .. }) => long_started = true,
            (
                1,
                SeqEvent::Done {
                    completion_tokens,
                    reason,
                    ..
                },
            ) => {
                assert_eq!((completion_tokens, reason), (2, FinishReason::Length));
                long_done = true;
            }
            (tag, other) => panic!("sequence {tag}: {other:?}"),
        }
    }
    assert!(
        decoded_before_long >= 15,
        "decoder made {decoded_before_long} steps"
    );
    let completion_tokens = short_done.unwrap();
    assert_eq!(completion_tokens, decoded_before_long + rest);
    assert_eq!(completion_tokens, 40);
}

/// Allows only even token ids (and records that it saw every sampled token).
struct EvenOnly(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl muser_engine::sched::TokenConstraint for EvenOnly {
    fn allows(&self, token: u32) -> bool {
        token % 2 == 0
    }
    fn accept(&mut self, _token: u32) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn a_constraint_limits_the_sampled_tokens_and_keeps_seeds_reproducible() {
    let m = Arc::new(model(1));
    let s = Scheduler::start(m, cfg(2)).unwrap();
    let run = || {
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (mut req, rx) = request(prompt(3, 5), 9, 20, None);
        req.constraint = Some(Box::new(EvenOnly(seen.clone())));
        s.submit(req).unwrap();
        let (toks, _) = collect(&rx);
        assert_eq!(seen.load(std::sync::atomic::Ordering::Relaxed), toks.len());
        toks
    };
    let a = run();
    assert_eq!(a.len(), 20);
    assert!(a.iter().all(|(t, _)| t % 2 == 0), "{a:?}");
    assert_eq!(a, run());
}

#[test]
fn requests_whose_clients_left_do_not_hold_queue_places() {
    let m = Arc::new(model(1));
    let tight = SchedulerConfig {
        queue_size: 1,
        max_sequences: 1,
        ..cfg(1)
    };
    let s = Scheduler::start(m, tight).unwrap();
    let (busy, rx_busy) = request(prompt(1, 8), 1, 60, None);
    s.submit(busy).unwrap();
    // Wait until it runs, so the queue is empty.
    assert!(matches!(
        rx_busy.recv_timeout(Duration::from_secs(30)),
        Ok(SeqEvent::Token { .. })
    ));
    let (gone, _rx) = request(prompt(2, 8), 2, 10, Some(0));
    s.submit(gone).unwrap();
    // The queue holds one request; the departed one does not count.
    let (next, rx_next) = request(prompt(3, 8), 3, 5, None);
    assert_eq!(s.submit(next), Ok(()));
    assert_eq!(collect(&rx_next).1, Some(FinishReason::Length));
}

/// One sequence's tokens with their log-probabilities, and its finish reason.
type Outcome = (Vec<(u32, f32)>, Option<FinishReason>);

/// Submits every prompt (seed = its index, 12 tokens each) and collects the results.
fn run_all(s: &Scheduler, prompts: &[Vec<u32>]) -> Vec<Outcome> {
    let rxs: Vec<_> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (req, rx) = request(p.clone(), i as u64, 12, None);
            s.submit(req).unwrap();
            rx
        })
        .collect();
    rxs.iter().map(collect).collect()
}

#[test]
fn the_one_by_one_runner_gives_the_batched_runners_tokens() {
    let m = Arc::new(model(2));
    let prompts: Vec<Vec<u32>> = (0..4).map(|i| prompt(i + 7, 2 + 13 * i as usize)).collect();
    let batched = {
        let s = Scheduler::start(m.clone(), cfg(3)).unwrap();
        run_all(&s, &prompts)
    };
    let s = Scheduler::start_with(m.clone(), cfg(3), Runner::OneByOne(Box::new(HostSequences)))
        .unwrap();
    let each = run_all(&s, &prompts);
    // Same tokens and the same log-probabilities, bit for bit (rows do not depend on what
    // else is in the batch, nor on how a prompt is chunked).
    assert_eq!(each, batched);
    assert!(each
        .iter()
        .all(|r| r.1 == Some(FinishReason::Length) && r.0.len() == 12));
    let st = s.stats();
    let relaxed = std::sync::atomic::Ordering::Relaxed;
    // Several sequences ran in one step (a step feeds each of them in turn).
    let (steps, rows) = (st.steps.load(relaxed), st.step_rows.load(relaxed));
    assert!(rows > steps + 10, "rows {rows} steps {steps}");
    settle(|| {
        st.running.load(relaxed) == 0
            && st.kv_bytes.load(relaxed) == 0
            && st.finished.load(relaxed) == 4
    });
    assert_eq!(st.kv_bytes.load(relaxed), 0);
    assert_eq!(st.finished.load(relaxed), 4);
    drop(s);
    // Ended sequences are reset and reused: four requests over three slots open three.
    let opened = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let source = Failing {
        fail_at: usize::MAX,
        opened: opened.clone(),
    };
    let s = Scheduler::start_with(m.clone(), cfg(3), Runner::OneByOne(Box::new(source))).unwrap();
    assert_eq!(run_all(&s, &prompts), batched);
    assert_eq!(opened.load(relaxed), 3);
}

/// Host sequences for the one-by-one runner; the first one opened fails at its `fail_at`-th
/// feed (counting from 1).
struct Failing {
    fail_at: usize,
    opened: Arc<std::sync::atomic::AtomicUsize>,
}

/// The test sequences' size queries, answered by the wrapped host sequence.
macro_rules! delegate_sizes {
    () => {
        fn len(&self) -> usize {
            self.inner.len()
        }
        fn capacity(&self) -> usize {
            self.inner.capacity()
        }
        fn kv_bytes(&self) -> usize {
            self.inner.kv_bytes()
        }
    };
}

struct FailingSeq<'a> {
    inner: HostSequence<'a>,
    feeds: usize,
    fail_at: Option<usize>,
}

impl Sequence for FailingSeq<'_> {
    fn feed(&mut self, tokens: &[u32]) -> muser_engine::Result<Vec<f32>> {
        self.feeds += 1;
        if Some(self.feeds) == self.fail_at {
            return Err(muser_engine::Error::Cuda("injected launch failure".into()));
        }
        self.inner.feed(tokens)
    }
    delegate_sizes!();
    fn reset(&mut self) -> muser_engine::Result<()> {
        self.inner.reset()
    }
}

impl SequenceSource for Failing {
    fn open<'a>(
        &'a self,
        model: &'a Glimmer,
        max_positions: usize,
    ) -> muser_engine::Result<Box<dyn Sequence + 'a>> {
        let first = self
            .opened
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            == 0;
        Ok(Box::new(FailingSeq {
            inner: HostSequence::new(model, max_positions),
            feeds: 0,
            fail_at: first.then_some(self.fail_at),
        }))
    }
}

#[test]
fn a_failing_sequence_ends_alone_in_the_one_by_one_runner() {
    let m = Arc::new(model(1));
    let prompts = [prompt(3, 5), prompt(4, 6)];
    let want = {
        let s = Scheduler::start(m.clone(), cfg(2)).unwrap();
        run_all(&s, &prompts)
    };
    // The first sequence's 4th feed fails (its prompt in one chunk, then 2 decodes ran: 3
    // tokens out); the second runs to the end beside it.
    let source = Failing {
        fail_at: 4,
        opened: Default::default(),
    };
    let s = Scheduler::start_with(m.clone(), cfg(2), Runner::OneByOne(Box::new(source))).unwrap();
    let (req, rx) = request(prompts[0].clone(), 0, 12, None);
    s.submit(req).unwrap();
    let (req, rx2) = request(prompts[1].clone(), 1, 12, None);
    s.submit(req).unwrap();
    let mut toks = Vec::new();
    let msg = loop {
        match rx.recv_timeout(Duration::from_secs(30)).unwrap() {
            SeqEvent::Token { id, .. } => toks.push(id),
            SeqEvent::Failed(m) => break m,
            SeqEvent::Done { .. } => panic!("a failing sequence finished"),
        }
    };
    assert!(msg.contains("injected launch failure"), "{msg}");
    let first3: Vec<u32> = want[0].0.iter().take(3).map(|t| t.0).collect();
    assert_eq!(toks, first3);
    assert_eq!(collect(&rx2), want[1]);
    let st = s.stats();
    let relaxed = std::sync::atomic::Ordering::Relaxed;
    settle(|| st.running.load(relaxed) == 0 && st.kv_bytes.load(relaxed) == 0);
    assert_eq!(st.running.load(relaxed), 0);
    assert_eq!(st.kv_bytes.load(relaxed), 0);
    assert!(s.is_running());
}

/// A source that cannot open sequences (a GPU out of memory for the KV cache).
struct NoRoom;

impl SequenceSource for NoRoom {
    fn open<'a>(
        &'a self,
        _model: &'a Glimmer,
        _max_positions: usize,
    ) -> muser_engine::Result<Box<dyn Sequence + 'a>> {
        Err(muser_engine::Error::Cuda(
            "out of memory allocating 1.83 GB".into(),
        ))
    }
}

#[test]
fn a_sequence_that_cannot_be_opened_fails_its_request_alone() {
    let m = Arc::new(model(1));
    let s = Scheduler::start_with(m, cfg(2), Runner::OneByOne(Box::new(NoRoom))).unwrap();
    for i in 0..3u64 {
        let (req, rx) = request(prompt(5, 6), i, 4, None);
        s.submit(req).unwrap();
        match rx.recv_timeout(Duration::from_secs(30)).unwrap() {
            SeqEvent::Failed(m) => {
                assert!(m.contains("KV cache") && m.contains("out of memory"), "{m}");
            }
            other => panic!("expected a failure, got {other:?}"),
        }
    }
    // The scheduler is still there, holding nothing.
    assert!(s.is_running());
    assert_eq!(
        s.stats().running.load(std::sync::atomic::Ordering::Relaxed),
        0
    );
}

/// Host sequences that take the started-step path as a GPU session does: `start_step` keeps
/// the token, `finish_step` runs it (and counts both, to show the runner used them).
struct Deferred {
    started: Arc<std::sync::atomic::AtomicUsize>,
}

struct DeferredSeq<'a> {
    inner: HostSequence<'a>,
    pending: Option<u32>,
    started: Arc<std::sync::atomic::AtomicUsize>,
}

impl Sequence for DeferredSeq<'_> {
    fn feed(&mut self, tokens: &[u32]) -> muser_engine::Result<Vec<f32>> {
        assert!(self.pending.is_none(), "feed while a step is started");
        self.inner.feed(tokens)
    }
    delegate_sizes!();
    fn reset(&mut self) -> muser_engine::Result<()> {
        self.pending = None;
        self.inner.reset()
    }
    fn start_step(&mut self, token: u32) -> muser_engine::Result<bool> {
        assert!(self.pending.replace(token).is_none(), "two steps started");
        self.started
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(true)
    }
    fn finish_step(&mut self) -> muser_engine::Result<Vec<f32>> {
        let t = self
            .pending
            .take()
            .expect("finish_step without a started step");
        self.inner.feed(&[t])
    }
}

impl SequenceSource for Deferred {
    fn open<'a>(
        &'a self,
        model: &'a Glimmer,
        max_positions: usize,
    ) -> muser_engine::Result<Box<dyn Sequence + 'a>> {
        Ok(Box::new(DeferredSeq {
            inner: HostSequence::new(model, max_positions),
            pending: None,
            started: self.started.clone(),
        }))
    }
}

#[test]
fn started_steps_give_the_batched_runners_tokens() {
    let m = Arc::new(model(2));
    let prompts: Vec<Vec<u32>> = (0..4).map(|i| prompt(i + 3, 2 + 9 * i as usize)).collect();
    let batched = {
        let s = Scheduler::start(m.clone(), cfg(3)).unwrap();
        run_all(&s, &prompts)
    };
    let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let source = Deferred {
        started: started.clone(),
    };
    let s = Scheduler::start_with(m, cfg(3), Runner::OneByOne(Box::new(source))).unwrap();
    assert_eq!(run_all(&s, &prompts), batched);
    // Every decode step after a prompt's first token went through start/finish: 11 of each
    // sequence's 12 tokens.
    assert_eq!(started.load(std::sync::atomic::Ordering::Relaxed), 4 * 11);
}
