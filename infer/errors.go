package infer

import "errors"

// Sentinel errors; errors from this package wrap one of them.
var (
	// ErrArchitecture means the tensors do not form a model this package
	// runs (an unknown architecture or a missing tensor).
	ErrArchitecture = errors.New("infer: unknown architecture")

	// ErrConfig means a hyper-parameter is missing, unreadable or
	// inconsistent with the tensor shapes.
	ErrConfig = errors.New("infer: bad model configuration")

	// ErrDType means a tensor's element type is not one the kernels read
	// (F32, F16, BF16).
	ErrDType = errors.New("infer: unsupported tensor type")

	// ErrTokenizer means a tokenizer file is malformed or does not fit
	// the model.
	ErrTokenizer = errors.New("infer: bad tokenizer")

	// ErrInput means a token, position or prompt is outside what the
	// model accepts.
	ErrInput = errors.New("infer: bad input")
)
