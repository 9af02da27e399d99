//! Synthetic Muse Glimmer GGUF generator.
