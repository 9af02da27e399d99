//! Glimmer weights: typed tensor names, shape and type validation, zero-copy views over the mmap.

use std::sync::Arc;

use muser_gguf::{GgmlType, GgufFile, TensorInfo};

use crate::config::GlimmerConfig;
use crate::error::{Error, Result};

/// Every tensor the Glimmer graph reads, by role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TensorName {
    TokenEmbd,
    OutputNorm,
    Output,
    AttnNorm { layer: usize },
    AttnQ { layer: usize },
    AttnK { layer: usize },
    AttnV { layer: usize },
    AttnGate { layer: usize },
    AttnQNorm { layer: usize },
    AttnKNorm { layer: usize },
    AttnOutput { layer: usize },
    PostAttnNorm { layer: usize },
    FfnNorm { layer: usize },
    FfnGate { layer: usize },
    FfnUp { layer: usize },
    FfnDown { layer: usize },
    PostFfwNorm { layer: usize },
}

impl TensorName {
    /// The GGUF tensor name (llama.cpp's naming).
    pub fn gguf_name(self) -> String {
        use TensorName::*;
        let (l, suffix) = match self {
            TokenEmbd => return "token_embd.weight".into(),
            OutputNorm => return "output_norm.weight".into(),
            Output => return "output.weight".into(),
            AttnNorm { layer } => (layer, "attn_norm"),
            AttnQ { layer } => (layer, "attn_q"),
            AttnK { layer } => (layer, "attn_k"),
            AttnV { layer } => (layer, "attn_v"),
            AttnGate { layer } => (layer, "attn_gate"),
            AttnQNorm { layer } => (layer, "attn_q_norm"),
            AttnKNorm { layer } => (layer, "attn_k_norm"),
            AttnOutput { layer } => (layer, "attn_output"),
            PostAttnNorm { layer } => (layer, "post_attention_norm"),
            FfnNorm { layer } => (layer, "ffn_norm"),
            FfnGate { layer } => (layer, "ffn_gate"),
            FfnUp { layer } => (layer, "ffn_up"),
            FfnDown { layer } => (layer, "ffn_down"),
            PostFfwNorm { layer } => (layer, "post_ffw_norm"),
        };
        format!("blk.{l}.{suffix}.weight")
    }
}

/// A 2-D weight matrix as stored: `n_out` rows of `n_in` elements (ggml `[n_in, n_out]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    pub name: String,
    pub ty: GgmlType,
    pub n_in: usize,
    pub n_out: usize,
    offset: usize,
    len: usize,
}

impl Matrix {
    /// Bytes of one row.
    pub fn row_bytes(&self) -> usize {
        self.len / self.n_out.max(1)
    }
}

/// One layer's weights: matrices stay quantized in the mmap, norm vectors are f32.
#[derive(Debug, Clone)]
pub struct LayerWeights {
    pub attn_norm: Vec<f32>,
    pub attn_q: Matrix,
    pub attn_k: Matrix,
    pub attn_v: Matrix,
    pub attn_gate: Matrix,
    pub attn_q_norm: Vec<f32>,
    pub attn_k_norm: Vec<f32>,
    pub attn_output: Matrix,
    pub post_attn_norm: Vec<f32>,
    pub ffn_norm: Vec<f32>,
    pub ffn_gate: Matrix,
    pub ffn_up: Matrix,
    pub ffn_down: Matrix,
    pub post_ffw_norm: Vec<f32>,
}

impl LayerWeights {
    /// The layer's eight matrices, in graph order (Q, K, V, gate, output, FFN gate, up, down).
    pub fn matrices(&self) -> [&Matrix; 8] {
        [
            &self.attn_q,
            &self.attn_k,
            &self.attn_v,
            &self.attn_gate,
            &self.attn_output,
            &self.ffn_gate,
            &self.ffn_up,
            &self.ffn_down,
        ]
    }
}

/// All weights of a Glimmer file.
pub struct Weights {
    file: Arc<GgufFile>,
    pub token_embd: Matrix,
    pub output_norm: Vec<f32>,
    pub output: Matrix,
    pub layers: Vec<LayerWeights>,
}

impl Weights {
    /// Finds, validates (shape, type) and maps every tensor of the graph.
    pub fn load(file: Arc<GgufFile>, cfg: &GlimmerConfig) -> Result<Weights> {
        let (e, ff, vocab) = (cfg.n_embd, cfg.n_ff, cfg.n_vocab);
        let (q, kv, hd) = (cfg.q_dim(), cfg.kv_dim(), cfg.head_dim);
        for l in 0..cfg.n_layer {
            let fused = format!("blk.{l}.attn_qkv.weight");
            if file.header().tensor(&fused).is_some() {
                return Err(Error::FusedQkv(fused));
            }
        }
        let matrix = |n: TensorName, n_in: usize, n_out: usize| -> Result<Matrix> {
            let info = find(&file, n, &[n_in as u64, n_out as u64])?;
            if !muser_quant::can_dequantize(info.ty) {
                return Err(Error::TensorType {
                    tensor: info.name.clone(),
                    ty: info.ty,
                    supported: type_names(),
                });
            }
            Ok(Matrix {
                name: info.name.clone(),
                ty: info.ty,
                n_in,
                n_out,
                offset: info.file_offset as usize,
                len: info.n_bytes as usize,
            })
        };
        let vector = |n: TensorName, len: usize| -> Result<Vec<f32>> {
            let info = find(&file, n, &[len as u64])?;
            let bytes = file.tensor_data(info)?;
            Ok(muser_quant::dequantize_tensor(info, bytes)?)
        };
        let mut layers = Vec::with_capacity(cfg.n_layer);
        for layer in 0..cfg.n_layer {
            use TensorName::*;
            layers.push(LayerWeights {
                attn_norm: vector(AttnNorm { layer }, e)?,
                attn_q: matrix(AttnQ { layer }, e, q)?,
                attn_k: matrix(AttnK { layer }, e, kv)?,
                attn_v: matrix(AttnV { layer }, e, kv)?,
                attn_gate: matrix(AttnGate { layer }, e, q)?,
                attn_q_norm: vector(AttnQNorm { layer }, hd)?,
                attn_k_norm: vector(AttnKNorm { layer }, hd)?,
                attn_output: matrix(AttnOutput { layer }, q, e)?,
                post_attn_norm: vector(PostAttnNorm { layer }, e)?,
                ffn_norm: vector(FfnNorm { layer }, e)?,
                ffn_gate: matrix(FfnGate { layer }, e, ff)?,
                ffn_up: matrix(FfnUp { layer }, e, ff)?,
                ffn_down: matrix(FfnDown { layer }, ff, e)?,
                post_ffw_norm: vector(PostFfwNorm { layer }, e)?,
            });
        }
        Ok(Weights {
            token_embd: matrix(TensorName::TokenEmbd, e, vocab)?,
            output_norm: vector(TensorName::OutputNorm, e)?,
            output: matrix(TensorName::Output, e, vocab)?,
            layers,
            file,
        })
    }

    /// The quantized bytes of a matrix (zero-copy).
    pub fn bytes(&self, m: &Matrix) -> &[u8] {
        // Offsets were validated against the mapping when the file was opened.
        &self.file.bytes()[m.offset..m.offset + m.len]
    }

    pub fn file(&self) -> &GgufFile {
        &self.file
    }

    /// Bytes read per decoded token: every matrix once (embedding: one row).
    pub fn decode_bytes(&self) -> u64 {
        let mats = self.layers.iter().flat_map(LayerWeights::matrices);
        let n: usize =
            mats.map(|m| m.len).sum::<usize>() + self.output.len + self.token_embd.row_bytes();
        n as u64
    }

    /// Dequantizes row `row` of `m` into `out` (`out.len() == m.n_in`).
    pub fn dequantize_row(&self, m: &Matrix, row: usize, out: &mut [f32]) -> Result<()> {
        let rb = m.row_bytes();
        let bytes = &self.bytes(m)[row * rb..(row + 1) * rb];
        muser_quant::dequantize_row(m.ty, bytes, out)?;
        Ok(())
    }
}

fn type_names() -> String {
    muser_quant::DEQUANTIZE_TYPES
        .iter()
        .map(|t| t.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn find<'a>(file: &'a GgufFile, name: TensorName, dims: &[u64]) -> Result<&'a TensorInfo> {
    let n = name.gguf_name();
    let info = file
        .header()
        .tensor(&n)
        .ok_or_else(|| Error::MissingTensor(n.clone()))?;
    // A trailing dimension of 1 is the same shape in ggml.
    let mut found = info.dims.clone();
    while found.len() > dims.len() && found.last() == Some(&1) {
        found.pop();
    }
    if found != dims {
        return Err(Error::TensorShape {
            tensor: n,
            expected: dims.to_vec(),
            found: info.dims.clone(),
        });
    }
    Ok(info)
}
