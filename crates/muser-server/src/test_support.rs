//! Test helpers: the tokenizer of a small synthetic Glimmer file, written once per thread.

use muser_tokenizer::Tokenizer;

/// The tiny preset's tokenizer (4,048 tokens with the Glimmer specials).
pub fn tokenizer() -> Tokenizer {
    let dir = std::env::temp_dir().join(format!("muser-server-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("tok-{:?}.gguf", std::thread::current().id()));
    let mut c = muser_synth::SynthConfig::preset(muser_synth::Preset::Tiny);
    c.n_layer = 1;
    muser_synth::write_model(&c, &p, &|_, _| {}).unwrap();
    let f = muser_gguf::GgufFile::open(&p).unwrap();
    Tokenizer::from_gguf(f.header()).unwrap()
}
