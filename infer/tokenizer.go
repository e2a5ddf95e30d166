package infer

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Tokenizer turns text into tokens and tokens back into text.
type Tokenizer interface {
	// Encode returns the prompt's tokens, BOS first where the model has one.
	Encode(text string) ([]int, error)
	// Piece returns the text of token after prev (as llama2.c's decode
	// and safe_printf print it).
	Piece(prev, token int) string
	// Vocab is the number of tokens.
	Vocab() int
	// BOS is the begin-of-sequence token, or -1 when there is none;
	// generation stops when the model produces it.
	BOS() int
}

// Llama2cTokenizer reads llama2.c's tokenizer.bin and encodes as its
// run.c does: BOS = 1, the dummy-prefix " " for a non-empty prompt,
// UTF-8 characters looked up whole with byte fallback (token = byte + 3),
// then the best-scoring pair merged until none merges.
type Llama2cTokenizer struct {
	vocab  []string
	scores []float32
	lookup map[string]int
	maxLen int
}

// maxTokenizerVocab bounds a tokenizer file's vocabulary.
const maxTokenizerVocab = 1 << 20

// ParseLlama2cTokenizer reads a tokenizer in llama2.c's format: int32
// max_token_length, then per token a float32 score, an int32 length and
// the bytes. vocab is the model's vocabulary size (the file does not hold
// it); the file must hold exactly that many tokens.
func ParseLlama2cTokenizer(b []byte, vocab int) (*Llama2cTokenizer, error) {
	if vocab <= 0 || vocab > maxTokenizerVocab {
		return nil, fmt.Errorf("%w: vocabulary of %d tokens", ErrTokenizer, vocab)
	}
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrTokenizer, len(b))
	}
	t := &Llama2cTokenizer{maxLen: int(int32(binary.LittleEndian.Uint32(b))), lookup: make(map[string]int, vocab)}
	if t.maxLen <= 0 || t.maxLen > 1<<16 {
		return nil, fmt.Errorf("%w: max_token_length %d", ErrTokenizer, t.maxLen)
	}
	pos := 4
	for i := range vocab {
		if len(b)-pos < 8 {
			return nil, fmt.Errorf("%w: file ends at token %d of %d (offset %d)", ErrTokenizer, i, vocab, pos)
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(b[pos:]))
		n := int(int32(binary.LittleEndian.Uint32(b[pos+4:])))
		pos += 8
		if n < 0 || n > len(b)-pos {
			return nil, fmt.Errorf("%w: token %d has length %d at offset %d, beyond the file", ErrTokenizer, i, n, pos-4)
		}
		s := string(b[pos : pos+n])
		pos += n
		if k := strings.IndexByte(s, 0); k >= 0 {
			s = s[:k] // C strings end at NUL
		}
		t.vocab = append(t.vocab, s)
		t.scores = append(t.scores, score)
		if _, dup := t.lookup[s]; !dup {
			t.lookup[s] = i
		}
	}
	if pos != len(b) {
		return nil, fmt.Errorf("%w: %d bytes after %d tokens (is the vocabulary larger than the model's %d?)", ErrTokenizer, len(b)-pos, vocab, vocab)
	}
	return t, nil
}

// Vocab returns the number of tokens.
func (t *Llama2cTokenizer) Vocab() int { return len(t.vocab) }

// BOS is token 1.
func (t *Llama2cTokenizer) BOS() int { return 1 }

// Encode is run.c's encode(text, bos=1, eos=0).
func (t *Llama2cTokenizer) Encode(text string) ([]int, error) {
	if strings.IndexByte(text, 0) >= 0 {
		return nil, fmt.Errorf("%w: the prompt holds a NUL byte", ErrInput)
	}
	if len(t.vocab) < 259 {
		return nil, fmt.Errorf("%w: %d tokens leave no room for byte fallback (3 + 256)", ErrTokenizer, len(t.vocab))
	}
	tokens := []int{1}
	if text != "" {
		id, ok := t.lookup[" "]
		if !ok {
			return nil, fmt.Errorf("%w: no token for the dummy prefix \" \"", ErrTokenizer)
		}
		tokens = append(tokens, id)
	}
	// each UTF-8 character (at most 4 bytes) whole, else its bytes
	for i := 0; i < len(text); {
		j := i + 1
		for j < len(text) && text[j]&0xc0 == 0x80 && j-i < 4 {
			j++
		}
		if id, ok := t.lookup[text[i:j]]; ok {
			tokens = append(tokens, id)
		} else {
			for k := i; k < j; k++ {
				tokens = append(tokens, int(text[k])+3)
			}
		}
		i = j
	}
	// merge the best-scoring pair until none is in the vocabulary
	for {
		best, bestID, bestIdx := float32(-1e10), -1, -1
		for i := 0; i+1 < len(tokens); i++ {
			id, ok := t.lookup[t.vocab[tokens[i]]+t.vocab[tokens[i+1]]]
			if ok && t.scores[id] > best {
				best, bestID, bestIdx = t.scores[id], id, i
			}
		}
		if bestIdx < 0 {
			break
		}
		tokens[bestIdx] = bestID
		tokens = append(tokens[:bestIdx+1], tokens[bestIdx+2:]...)
	}
	return tokens, nil
}

// Piece is run.c's decode(prev, token) as safe_printf prints it: the
// leading space after BOS dropped, <0xXX> tokens as their byte, and a
// single byte that is neither printable nor space as nothing.
func (t *Llama2cTokenizer) Piece(prev, token int) string {
	if token < 0 || token >= len(t.vocab) {
		return ""
	}
	p := t.vocab[token]
	if prev == 1 && strings.HasPrefix(p, " ") {
		p = p[1:]
	}
	if len(p) == 6 && strings.HasPrefix(p, "<0x") && p[5] == '>' {
		var v byte
		if _, err := fmt.Sscanf(p, "<0x%02X>", &v); err == nil {
			p = string([]byte{v})
		}
	}
	if len(p) == 1 && !isPrintOrSpace(p[0]) {
		return ""
	}
	return p
}

// isPrintOrSpace is C's isprint(c) || isspace(c) in the "C" locale.
func isPrintOrSpace(c byte) bool {
	return (c >= 0x20 && c < 0x7f) || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// ByteTokenizer is the byte-level GPT's: a token per byte, no BOS.
type ByteTokenizer struct{}

// Encode returns the bytes of text.
func (ByteTokenizer) Encode(text string) ([]int, error) {
	out := make([]int, len(text))
	for i := range len(text) {
		out[i] = int(text[i])
	}
	return out, nil
}

// Piece returns the byte.
func (ByteTokenizer) Piece(_, token int) string { return string([]byte{byte(token)}) }

// Vocab is 256.
func (ByteTokenizer) Vocab() int { return 256 }

// BOS is -1: there is none.
func (ByteTokenizer) BOS() int { return -1 }

// Text joins the pieces of tokens (each after its predecessor, prev being
// the token before the first); invalid UTF-8 becomes U+FFFD.
func Text(tok Tokenizer, prev int, tokens []int) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteString(tok.Piece(prev, t))
		prev = t
	}
	s := sb.String()
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}
