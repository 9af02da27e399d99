//! Aggregate decode throughput of the scheduler at several stream counts (no HTTP):
//! `cargo run --release -p muser-engine --example batch_decode -- MODEL.gguf [1,8] [tokens] [threads]`.
//! Each stream has a 16-token prompt and generates `tokens` tokens; prints the decode rate
//! (tokens generated after every stream has its first token, over that time) per count.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

use muser_engine::sched::{EventSink, Request, Scheduler, SchedulerConfig, SeqEvent};
use muser_engine::{Cpu, Glimmer, SamplingParams};

struct Sink(usize, mpsc::Sender<(usize, SeqEvent)>);

impl EventSink for Sink {
    fn send(&mut self, ev: SeqEvent) -> bool {
        self.1.send((self.0, ev)).is_ok()
    }
    fn is_closed(&self) -> bool {
        false
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: batch_decode MODEL [counts] [tokens] [threads]");
    let counts: Vec<usize> = args
        .get(2)
        .map_or("1,2,4,8,16", String::as_str)
        .split(',')
        .map(|s| s.parse().expect("stream count"))
        .collect();
    let tokens: usize = args.get(3).map_or(128, |s| s.parse().expect("tokens"));
    let threads: Option<usize> = args.get(4).map(|s| s.parse().expect("threads"));
    let model = Arc::new(Glimmer::open(path, Box::new(Cpu::new(threads).unwrap())).unwrap());
    let mut base = None;
    for &n in &counts {
        let cfg = SchedulerConfig {
            context: 16 + tokens + 1,
            max_sequences: n,
            queue_size: n,
            ..SchedulerConfig::default()
        };
        let s = Scheduler::start(model.clone(), cfg).unwrap();
        let (tx, rx) = mpsc::channel();
        let t0 = Instant::now();
        for i in 0..n {
            s.submit(Request {
                prompt: (0..16).map(|t| (i * 31 + t * 7) as u32 % 1000).collect(),
                sampling: SamplingParams {
                    seed: i as u64,
                    ..SamplingParams::default()
                },
                max_tokens: tokens,
                stop_tokens: vec![],
                logprobs: None,
                sink: Box::new(Sink(i, tx.clone())),
            })
            .unwrap();
        }
        let (mut generated, mut done) = (0, 0);
        let mut started = vec![false; n];
        let mut t_all_started = None;
        let mut after_start = 0;
        while done < n {
            match rx.recv().unwrap() {
                (i, SeqEvent::Token { .. }) => {
                    generated += 1;
                    if t_all_started.is_some() {
                        after_start += 1;
                    } else {
                        started[i] = true;
                        if started.iter().all(|&s| s) {
                            t_all_started = Some(Instant::now());
                        }
                    }
                }
                (_, SeqEvent::Done { .. }) => done += 1,
                (_, SeqEvent::Failed(m)) => panic!("{m}"),
            }
        }
        let t1 = t_all_started.unwrap_or(t0);
        let tps = after_start as f64 / t1.elapsed().as_secs_f64().max(1e-9);
        let b = *base.get_or_insert(tps);
        println!(
            "streams {n:3}: {generated} tokens, decode {tps:9.1} tok/s aggregate ({:.2}x one stream)",
            tps / b
        );
    }
}
