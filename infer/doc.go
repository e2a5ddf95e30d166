// Package infer runs language models on weights that stay compressed.
//
// A Model is opened from an nzip archive (codec) or from the original
// checkpoint file (checkpoint). From an archive, the compressed bytes are
// held in memory and each tensor is decoded just before its matmul into
// one of a few reusable buffers (Options.Prefetch decodes the next one on
// another goroutine while the current one computes); from the original
// file the tensors are held as stored. Either way the arithmetic reads the
// same bytes in the same order, so the logits are identical bit for bit.
// Model.Prefill runs several positions (a prompt) together, each tensor
// decoded once for all of them, with the logits of running them one at a
// time.
//
// Two architectures are implemented from their definitions:
//
//   - Llama-2 as in llama2.c's run.c (RMSNorm, RoPE on adjacent pairs,
//     grouped-query attention, SwiGLU, tied or separate classifier), in
//     float32 with run.c's order of operations; Hugging Face tensor names
//     (safetensors) or llama.cpp's (GGUF).
//   - The byte-level GPT of train_tiny_gpt.py (learned positions,
//     pre-LayerNorm blocks, fused QKV, GELU MLP, untied head).
//
// Hyper-parameters come from the file (safetensors __metadata__, GGUF
// keys) or a config.json given in Options.Config, or are inferred from the
// tensor shapes; what cannot be known (the number of heads) is an error,
// never a guess. Tokenizers: llama2.c's tokenizer.bin format
// (Llama2cTokenizer) and bytes (ByteTokenizer); sampling is llama2.c's
// (Sampler).
package infer
