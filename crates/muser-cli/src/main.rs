//! The `muser` binary: argument parsing, logging of errors with their causes, exit codes.

mod bench;
mod bench_batch;
mod chat;
mod device;
mod inspect;
mod logits;
mod model_path;
mod npy;
mod run;
mod serve;
mod synth;
mod tensor;
mod tokenize;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "muser", version, about = "Muse Glimmer inference engine")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Complete a prompt and stream the text (no --model: a synthetic demo model).
    Run(Box<run::Args>),
    /// OpenAI- and llama-server-compatible HTTP server (continuous batching, metrics).
    Serve(Box<serve::Args>),
    /// Interactive chat through the model's chat template.
    Chat(Box<chat::Args>),
    /// Token ids of a text, comma-separated.
    Tokenize(tokenize::Args),
    /// Throughput like llama-bench: pp512, tg128 (at depths), median of repetitions.
    Bench(Box<bench::Args>),
    /// Describe a GGUF file: architecture, hyperparameters, tokenizer, tensors, totals.
    Inspect(inspect::Args),
    /// Write one tensor, dequantized to f32, as a .npy file (numpy shape [ne1, ne0]).
    Tensor(tensor::Args),
    /// Generate a deterministic synthetic Muse Glimmer GGUF.
    Synth(Box<synth::Args>),
    /// Float32 logits (after scale and softcap) for a token sequence, as .npy.
    Logits(logits::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(*args),
        Command::Chat(args) => chat::run(*args),
        Command::Serve(args) => serve::run(*args),
        Command::Tokenize(args) => tokenize::run(args),
        Command::Bench(args) => bench::run(*args),
        Command::Inspect(args) => inspect::run(args),
        Command::Tensor(args) => tensor::run(args),
        Command::Synth(args) => synth::run(*args),
        Command::Logits(args) => logits::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(1)
        }
    }
}
