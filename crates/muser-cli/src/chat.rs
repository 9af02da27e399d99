//! `muser chat`: an interactive conversation through the GGUF's chat template. Stops on
//! `<|eot|>`/EOS, never on `<|eom|>`; the reasoning channel stays hidden unless asked for.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use muser_engine::channels::{Channel, ChannelParser, Event, Marker, Markers};
use muser_engine::{Generator, Sampler};
use muser_tokenizer::{ChatMessage, ChatTemplate, StreamDecoder, Tokenizer};

use crate::device::{Device, DevicePlan, Opened};
use crate::run::SamplingArgs;

#[derive(clap::Args)]
pub struct Args {
    /// GGUF model (default: $MUSER_MODEL, else a synthetic demo model).
    #[arg(long)]
    model: Option<PathBuf>,
    /// System prompt.
    #[arg(long)]
    system: Option<String>,
    /// Print the model's reasoning channel (hidden by default).
    #[arg(long)]
    show_reasoning: bool,
    /// Most tokens per reply.
    #[arg(short = 'n', long = "n-predict", default_value_t = 1024)]
    n_predict: usize,
    #[arg(long, default_value_t = 8192)]
    ctx: usize,
    #[arg(long, default_value = "auto")]
    device: Device,
    #[command(flatten)]
    sampling: SamplingArgs,
}

pub fn run(args: Args) -> Result<()> {
    let path = crate::model_path::resolve(args.model)?;
    let opened = Opened::open(&path, args.device, None, DevicePlan::one(args.ctx))?;
    let model = &opened.model;
    let header = model.weights.file().header();
    let tok = Tokenizer::from_gguf(header)?;
    let template = ChatTemplate::from_gguf(header)
        .with_context(|| format!("{} has no usable chat template", path.display()))?;
    let markers = Markers {
        start: tok.token_id("<|start|>"),
        message: tok.token_id("<|message|>"),
        eom: tok.eom(),
        end_of_turn: tok.stop_tokens(),
    };
    let mut g = Generator::on(
        opened.sequence(args.ctx.min(model.cfg.context_length))?,
        Sampler::new(args.sampling.params())?,
    );
    let mut messages: Vec<ChatMessage> = args
        .system
        .iter()
        .map(|s| ChatMessage::new("system", s.clone()))
        .collect();
    eprintln!(
        "muser chat ({}): type a message; /reset clears, /exit or Ctrl-D quits.",
        model.backend().name()
    );
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    loop {
        eprint!("> ");
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end_matches(['\n', '\r']);
        match line {
            "/exit" | "/quit" => break,
            "/reset" => {
                messages.retain(|m| m.role == "system");
                g.reset()?;
                continue;
            }
            "" => continue,
            _ => {}
        }
        messages.push(ChatMessage::new("user", line));
        let prompt = template.render_messages(&messages, None, true)?;
        let ids = tok.encode(&prompt, false, true);
        if ids.len() + 1 >= g.capacity() {
            eprintln!(
                "(the conversation no longer fits in {} positions; /reset to start over)",
                g.capacity()
            );
            messages.pop();
            continue;
        }
        // Reuse the cached prefix when the rendered conversation extends it.
        if ids.starts_with(&g.tokens) && ids.len() > g.tokens.len() {
            let new = ids[g.tokens.len()..].to_vec();
            g.prefill(&new)?;
        } else {
            g.reset()?;
            g.prefill(&ids)?;
        }
        let (answer, reasoning) = reply(
            &mut g,
            &tok,
            &markers,
            args.n_predict,
            args.show_reasoning,
            &mut out,
        )?;
        writeln!(out)?;
        let mut m = ChatMessage::new("assistant", answer);
        m.reasoning_content = (!reasoning.is_empty()).then_some(reasoning);
        messages.push(m);
    }
    Ok(())
}

/// Generates one assistant turn, streaming the answer; returns (answer, reasoning).
fn reply(
    g: &mut Generator<'_>,
    tok: &Tokenizer,
    markers: &Markers,
    n_predict: usize,
    show_reasoning: bool,
    out: &mut impl Write,
) -> Result<(String, String)> {
    let mut parser = ChannelParser::default();
    let mut dec = StreamDecoder::new(tok, true);
    let (mut answer, mut reasoning) = (String::new(), String::new());
    let mut show = |events: Vec<Event>, out: &mut dyn Write| -> Result<()> {
        for e in events {
            match e {
                Event::Text {
                    channel: Channel::Answer,
                    text,
                } => {
                    answer.push_str(&text);
                    write!(out, "{text}")?;
                }
                Event::Text {
                    channel: Channel::Reasoning,
                    text,
                } => {
                    reasoning.push_str(&text);
                    if show_reasoning {
                        write!(out, "\x1b[2m{text}\x1b[0m")?;
                    }
                }
                Event::Text {
                    channel: Channel::Tool(name),
                    text,
                } => {
                    write!(out, "\n[tool call → {name}] {text}")?;
                }
                // Another role's message: the model imagines the next turn (not shown).
                Event::Text {
                    channel: Channel::Foreign(_),
                    ..
                } => {}
                Event::MessageEnd {
                    channel: Channel::Reasoning,
                } if show_reasoning => {
                    writeln!(out)?;
                }
                Event::MessageEnd { .. } => {}
            }
            out.flush()?;
        }
        Ok(())
    };
    for _ in 0..n_predict {
        if g.remaining() == 0 {
            break;
        }
        let t = g.next_token()?;
        match markers.of(t) {
            Some(m) => {
                show(parser.text(&dec.finish()), out)?;
                let end = m == Marker::EndOfTurn;
                show(parser.marker(m), out)?;
                if end {
                    return Ok((answer, reasoning));
                }
            }
            None => show(parser.text(&dec.push(t)), out)?,
        }
        // A message of another role (e.g. an imagined tool result) ends the assistant's turn.
        if matches!(parser.body_channel(), Some(Channel::Foreign(_))) {
            return Ok((answer, reasoning));
        }
    }
    show(parser.text(&dec.finish()), out)?;
    show(parser.finish(), out)?;
    Ok((answer, reasoning))
}
