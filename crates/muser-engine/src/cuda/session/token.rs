//! One token's step of a `CudaSession`: the step's parameters to the device, the graph of its
//! span replayed (or the kernels run and captured), the logits back (synchronously, or into
//! pinned memory behind the graph for `start_step` / `finish_step`) or only their argmax, the
//! per-kernel profile; and the session as a `Sequence`.

use cudarc::driver::PushKernelArg;

use super::{kernel, launch_err, mark, one_block, prefill, span_of, CudaSession};
use crate::cuda::cuda_err;
use crate::error::{Error, Result};

impl CudaSession<'_> {
    /// Runs one token at the next position and returns its logits (after scale and softcap).
    ///
    /// The first step runs the kernels directly (it also sizes every scratch buffer); the
    /// second captures them as a CUDA graph, which every later step replays.
    pub fn step(&mut self, token: u32) -> Result<Vec<f32>> {
        self.run(token)?;
        self.cuda
            .stream()
            .clone_dtoh(&self.s.logits)
            .map_err(cuda_err("copying logits back"))
    }

    /// Starts one token's step like `step` without waiting for it: the graph is launched and
    /// the logits are copied into pinned host memory behind it, so the host can go on (another
    /// session's step, sampling) while the GPU runs; `finish_step` waits and returns them.
    /// `Ok(false)`: no pinned memory, nothing started (use `step`).
    pub fn start_step(&mut self, token: u32) -> Result<bool> {
        if self.started {
            return Err(Error::Cuda(
                "start_step: the previous step was not finished".into(),
            ));
        }
        if self.host_logits.is_none() || self.logits_ready.is_none() {
            let ctx = self.cuda.context();
            // Not write-combined (cudarc's `alloc_pinned` is): the host reads every value.
            // SAFETY: the buffer is only read after a copy into it has completed (the event).
            let buf = unsafe { ctx.alloc_pinned_with_flags::<f32>(self.model.cfg.n_vocab, 0) };
            match (buf, ctx.new_event(None)) {
                (Ok(b), Ok(e)) => {
                    self.host_logits = Some(b);
                    self.logits_ready = Some(e);
                }
                _ => return Ok(false),
            }
        }
        self.run(token)?;
        let (Some(buf), Some(ready)) = (self.host_logits.as_mut(), self.logits_ready.as_ref())
        else {
            return Ok(false);
        };
        let st = self.cuda.stream();
        st.memcpy_dtoh(&self.s.logits, buf)
            .map_err(cuda_err("copying logits back"))?;
        ready
            .record(st)
            .map_err(cuda_err("recording the logits' event"))?;
        self.started = true;
        Ok(true)
    }

    /// The logits of the step `start_step` started, once the GPU has finished it.
    pub fn finish_step(&mut self) -> Result<Vec<f32>> {
        if !std::mem::take(&mut self.started) {
            return Err(Error::Cuda("finish_step without a started step".into()));
        }
        let (Some(buf), Some(ready)) = (self.host_logits.as_ref(), self.logits_ready.as_ref())
        else {
            return Err(Error::Cuda("finish_step without pinned logits".into()));
        };
        // The pinned slice's own event is never recorded (event tracking is off for the
        // session's context): the wait is on ours, recorded behind the copy.
        ready
            .synchronize()
            .map_err(cuda_err("waiting for the step's logits"))?;
        let logits = buf
            .as_slice()
            .map_err(cuda_err("reading the step's logits"))?;
        Ok(logits.to_vec())
    }

    /// Runs one token like `step` and returns the greedy next token, computed on the GPU:
    /// only 4 bytes come back instead of the logits (for benchmarks; `step` is the path of
    /// normal generation).
    pub fn step_argmax(&mut self, token: u32) -> Result<u32> {
        self.queue_step(token, true)?;
        let out = self
            .cuda
            .stream()
            .clone_dtoh(&self.argmax.slice(0..1))
            .map_err(cuda_err("copying the argmax back"))?;
        Ok(out[0])
    }

    /// Greedy decode of `n` tokens after `first`, fed on the device: step i's embedding reads
    /// the argmax of step i - 1, so the host queues every step without waiting for one and the
    /// GPU runs them back to back. Returns the n greedy tokens (token i: the argmax of step i's
    /// logits), the tokens of `step_argmax` fed its own output n times. With
    /// `DecodeTuning::fold_argmax`, where the LM head runs the flat kernel (`lm_argmax`, known
    /// after the session's first step), the LM head folds each step's argmax into a 64-bit
    /// key of the run (`fed_keys`) that the next step's gather decodes; otherwise the argmax
    /// kernel writes it into step i's parameters (uploaded before it, behind step i - 1).
    /// Without the device's embedding gather (the host uploads each row): `step_argmax`'s
    /// loop.
    pub fn greedy_fed(&mut self, first: u32, n: usize) -> Result<Vec<u32>> {
        if self.embed.is_none() {
            let mut t = first;
            return (0..n)
                .map(|_| {
                    t = self.step_argmax(t)?;
                    Ok(t)
                })
                .collect();
        }
        if n == 0 {
            return Ok(Vec::new());
        }
        if self.next + n > self.max_positions {
            return Err(Error::CacheFull {
                position: self.next + n - 1,
                capacity: self.max_positions,
            });
        }
        let st = self.cuda.stream().clone();
        // The run's keys on the device, zeroed (kept for the next run; dropped on an error,
        // which frees it in stream order, after every step queued that writes it).
        let mut keys = match self.fed_keys.take() {
            Some(b) if b.len() >= n => b,
            _ => st
                .alloc_zeros::<u64>(n)
                .map_err(cuda_err("allocating the greedy keys"))?,
        };
        st.memset_zeros(&mut keys.slice_mut(0..n))
            .map_err(cuda_err("clearing the greedy keys"))?;
        let kp = super::step::ptr(&keys, &st);
        let fold = self.cuda.decode_tuning().fold_argmax;
        self.link = [0, if fold { kp } else { 0 }];
        self.run(first)?;
        let tokens = if fold && self.lm_argmax {
            for i in 1..n as u64 {
                self.link = [kp + 8 * (i - 1), kp + 8 * i];
                // The token argument is only checked: the step reads its key in.
                self.run(0)?;
            }
            let k = st
                .clone_dtoh(&keys.slice(0..n))
                .map_err(cuda_err("copying the greedy keys back"))?;
            k.into_iter().map(crate::cuda::argmax_of_key).collect()
        } else {
            self.fed_by_kernel(n)?
        };
        self.fed_keys = Some(keys);
        Ok(tokens)
    }

    /// The rest of `greedy_fed` (its first step queued) without the folded argmax: step
    /// i - 1's argmax kernel writes word i - 1 of the run's tokens and step i's token.
    fn fed_by_kernel(&mut self, n: usize) -> Result<Vec<u32>> {
        let cuda = self.cuda;
        let st = cuda.stream().clone();
        // The run's tokens on the device (kept for the next run; dropped on an error, which
        // frees it in stream order).
        let fed = match self.fed.take() {
            Some(b) if b.len() >= n => b,
            _ => st
                .alloc_zeros::<u32>(n)
                .map_err(cuda_err("allocating the greedy tokens"))?,
        };
        let out = super::step::ptr(&fed, &st);
        let n_vocab = self.model.cfg.n_vocab;
        // The token id in the step's parameters (`prepare`'s layout).
        let tok = super::step::ptr(&self.params, &st) + 4 * (1 + 3 * self.layers.len() as u64);
        // Step i - 1's argmax into word i - 1 of the run's tokens and, but after the last
        // step, into step i's parameters (queued after their upload, before step i).
        let argmax = |s: &mut Self, i: usize, next: bool| {
            let also = [out + 4 * (i as u64 - 1), if next { tok } else { 0 }];
            // SAFETY: `also` holds two device words of this session: a word of `fed` (n
            // long) and the token of `params`, which only the step after this launch reads
            // (the stream orders them).
            unsafe { cuda.argmax_also(&s.s.logits.as_view(), n_vocab, &mut s.argmax, also) }
        };
        for i in 1..n {
            self.run_after(0, |s| argmax(s, i, true))?;
        }
        argmax(self, n, false)?;
        let tokens = st
            .clone_dtoh(&fed.slice(0..n))
            .map_err(cuda_err("copying the greedy tokens back"))?;
        self.fed = Some(fed);
        Ok(tokens)
    }

    /// Whether the session's LM head folds the greedy argmax (its flat kernel runs; known
    /// after the first step): `greedy_fed` then launches no argmax kernel where
    /// `DecodeTuning::fold_argmax` is on.
    pub fn folds_argmax(&self) -> bool {
        self.lm_argmax
    }

    /// Queues one step like `step_argmax` (with `argmax`) or `step` without waiting for it
    /// and without copying anything back, so the host runs ahead of the GPU (for measuring
    /// the host's share of a step; `synchronize` waits).
    #[doc(hidden)]
    pub fn queue_step(&mut self, token: u32, argmax: bool) -> Result<()> {
        self.run(token)?;
        if argmax {
            let n_vocab = self.model.cfg.n_vocab;
            self.cuda
                .argmax_into(&self.s.logits.as_view(), n_vocab, &mut self.argmax)?;
        }
        Ok(())
    }

    /// Waits for every queued step.
    #[doc(hidden)]
    pub fn synchronize(&self) -> Result<()> {
        self.cuda
            .stream()
            .synchronize()
            .map_err(cuda_err("waiting for the queued steps"))
    }

    /// Queues one token at the next position (the graph of its span, or its kernels on the
    /// first step; a span met for the first time is captured).
    pub(super) fn run(&mut self, token: u32) -> Result<()> {
        self.run_after(token, |_| Ok(()))
    }

    /// `run`, with `between` queued after the step's parameters and before its kernels.
    fn run_after(
        &mut self,
        token: u32,
        between: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<()> {
        let pos = self.prepare(token)?;
        between(self)?;
        let st = self.cuda.stream().clone();
        let span = self.span;
        match self.graphs.iter().find(|(s, _)| *s == span) {
            Some((_, g)) => g.launch().map_err(launch_err)?,
            None if self.steps == 0 => self.enqueue()?,
            None => {
                st.begin_capture(
                    cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                )
                .map_err(cuda_err("starting graph capture"))?;
                let enqueued = self.enqueue();
                let graph = st
                    .end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0))
                    .map_err(cuda_err("capturing the decode graph"))?;
                enqueued?;
                let g = graph.ok_or_else(|| Error::Cuda("empty decode graph".into()))?;
                g.launch().map_err(launch_err)?;
                self.graphs.push((span, g));
            }
        }
        self.steps += 1;
        self.next = pos + 1;
        Ok(())
    }

    /// The spans whose step graphs are captured, in capture order.
    #[doc(hidden)]
    pub fn graph_spans(&self) -> Vec<usize> {
        self.graphs.iter().map(|(s, _)| *s).collect()
    }

    /// Runs one token like `step`, but kernel by kernel (no graph) with an event after each,
    /// queued behind a 50 ms spin so that the host's launch gaps do not count: returns each
    /// kernel's label, its GPU time in milliseconds and the weight bytes it read.
    pub fn profile_step(&mut self, token: u32) -> Result<Vec<(String, f64, usize)>> {
        let pos = self.prepare(token)?;
        let st = self.cuda.stream().clone();
        let ev = |s: &cudarc::driver::CudaStream| {
            s.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(cuda_err("recording an event"))
        };
        let spin_ns: u64 = 50_000_000;
        unsafe {
            let mut b = st.launch_builder(kernel(self.cuda, "spin_ns")?);
            b.arg(&spin_ns);
            // SAFETY: no pointer arguments.
            b.launch(one_block(32)).map_err(launch_err)?;
        }
        let start = ev(&st)?;
        *self.prof.borrow_mut() = Some(Vec::with_capacity(2048));
        let enqueued = self.enqueue();
        let marks = self.prof.borrow_mut().take().unwrap_or_default();
        enqueued?;
        st.synchronize().map_err(cuda_err("profiling a step"))?;
        let mut out = Vec::with_capacity(marks.len());
        let mut prev = &start;
        for (label, bytes, e) in &marks {
            let ms = prev.elapsed_ms(e).map_err(cuda_err("reading an event"))?;
            out.push((label.clone(), f64::from(ms), *bytes));
            prev = e;
        }
        self.steps += 1;
        self.next = pos + 1;
        Ok(out)
    }

    /// Records an event labelled `label` after the last queued kernel (profiling pass only).
    pub(super) fn mark(&self, label: impl FnOnce() -> String) -> Result<()> {
        mark(self.cuda, &self.prof, 0, label)
    }

    /// Uploads the step's parameters (position, ring placement, token) and, when the gather
    /// kernel cannot read the table, the token's embedding row; returns the position.
    pub(super) fn prepare(&mut self, token: u32) -> Result<usize> {
        let link = std::mem::take(&mut self.link);
        let (cuda, model) = (self.cuda, self.model);
        let c = &model.cfg;
        let pos = self.next;
        if self.poisoned {
            return Err(prefill::poisoned());
        }
        if pos >= self.max_positions {
            return Err(Error::CacheFull {
                position: pos,
                capacity: self.max_positions,
            });
        }
        if token as usize >= c.n_vocab {
            return Err(Error::TokenOutOfRange {
                id: token,
                n_vocab: c.n_vocab,
            });
        }
        let st = cuda.stream().clone();
        if self.embed.is_none() {
            // Dequantized on the host (one row, exactly as the oracle does).
            let mut row = vec![0f32; c.n_embd];
            model
                .weights
                .dequantize_row(&model.weights.token_embd, token as usize, &mut row)?;
            st.memcpy_htod(&row, &mut self.s.x)
                .map_err(cuda_err("uploading the embedding"))?;
        }
        // Ring placement by explicit origins, then the step's parameters to the device.
        let mut params = Vec::with_capacity(self.key_words() + 4);
        params.push(pos as i32);
        for lay in &mut self.layers {
            let slot = lay.place.append(pos);
            params.extend([
                slot as i32,
                lay.place.origin_physical as i32,
                lay.place.len as i32,
            ]);
        }
        // A fed step's token is the previous step's argmax, read from its key.
        params.push(if link[0] != 0 { -1 } else { token as i32 });
        let used = self.layers.iter().map(|l| l.place.len).max().unwrap_or(0);
        self.span = span_of(used, cuda.decode_tuning().span_graphs, self.max_positions);
        // RoPE (sliding layers) of this position: θ_i = pos · base^(-2i/hd) in f64 as the
        // oracle (`ops::rope_adjacent`), cos and sin rounded to f32 as the kernel used them.
        let hd = c.head_dim;
        for i in 0..hd / 2 {
            let theta =
                pos as f64 * f64::from(c.rope_freq_base_swa).powf(-2.0 * i as f64 / hd as f64);
            let (s, co) = theta.sin_cos();
            params.extend([(co as f32).to_bits() as i32, (s as f32).to_bits() as i32]);
        }
        debug_assert_eq!(params.len(), self.key_words());
        for a in link {
            params.extend(crate::cuda::address_words(a));
        }
        st.memcpy_htod(&params, &mut self.params)
            .map_err(cuda_err("uploading step parameters"))?;
        Ok(pos)
    }
}

impl crate::generate::Sequence for CudaSession<'_> {
    /// Several tokens go through the batched prefill (`prefill`), one through a decode step.
    fn feed(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        if tokens.is_empty() {
            return Ok(Vec::new());
        }
        self.prefill(tokens)
    }

    fn len(&self) -> usize {
        self.next
    }

    fn capacity(&self) -> usize {
        self.max_positions
    }

    fn reset(&mut self) -> Result<()> {
        for l in &mut self.layers {
            l.place.origin_logical = 0;
            l.place.origin_physical = 0;
            l.place.len = 0;
        }
        self.next = 0;
        self.poisoned = false;
        self.started = false;
        // The captured graph stays valid: it reads the (reset) placement from device memory.
        Ok(())
    }
    fn kv_bytes(&self) -> usize {
        CudaSession::kv_bytes(self)
    }

    fn start_step(&mut self, token: u32) -> Result<bool> {
        CudaSession::start_step(self, token)
    }

    fn finish_step(&mut self) -> Result<Vec<f32>> {
        CudaSession::finish_step(self)
    }
}
