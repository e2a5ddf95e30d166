package checkpoint

import (
	"encoding/json"
	"strconv"
)

// jsonMaxDepth bounds the nesting of JSON values that a header may carry in
// fields this package skips.
const jsonMaxDepth = 512

// A jsonScanner reads RFC 8259 JSON from a header in memory, one token at a
// time, and reports errors as FormatErrors at the file offset where they
// occur. It exists because the safetensors header is a fixed shape that is
// read much faster, and with better error positions, than through
// encoding/json's token API; the fuzzers check that it accepts nothing that
// encoding/json rejects.
type jsonScanner struct {
	b      []byte
	i      int
	base   int64 // file offset of b[0]
	format string
}

// off returns the file offset of the next unread byte.
func (s *jsonScanner) off() int64 { return s.base + int64(s.i) }

func (s *jsonScanner) errorf(sentinel error, msg string, args ...any) error {
	return formatErr(s.format, s.off(), sentinel, msg, args...)
}

// syntax reports an unexpected byte (or the end of the header).
func (s *jsonScanner) syntax(want string) error {
	if s.i >= len(s.b) {
		return s.errorf(ErrMalformed, "JSON header ends early, want %s", want)
	}
	return s.errorf(ErrMalformed, "invalid JSON: found %q, want %s", s.b[s.i], want)
}

func (s *jsonScanner) skipSpace() {
	for s.i < len(s.b) && isJSONSpace(s.b[s.i]) {
		s.i++
	}
}

// peek skips white space and returns the next byte, or 0 at the end.
func (s *jsonScanner) peek() byte {
	s.skipSpace()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// consume skips white space and the byte c.
func (s *jsonScanner) consume(c byte) error {
	if s.peek() != c {
		return s.syntax(strconv.QuoteRune(rune(c)))
	}
	s.i++
	return nil
}

// next reads the ',' or the closing byte after an element of an object or
// array. more is true after a ','.
func (s *jsonScanner) next(closing byte) (more bool, err error) {
	switch s.peek() {
	case ',':
		s.i++
		return true, nil
	case closing:
		s.i++
		return false, nil
	}
	return false, s.syntax("',' or " + strconv.QuoteRune(rune(closing)))
}

// members reads the members of an object whose '{' has been read, through
// the closing '}'. For each member it reads the key and the ':' and calls f
// with the key and its file offset; f must read the value.
func (s *jsonScanner) members(f func(key string, at int64) error) error {
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		s.skipSpace()
		at := s.off()
		key, err := s.str()
		if err != nil {
			return err
		}
		if err := s.consume(':'); err != nil {
			return err
		}
		if err := f(key, at); err != nil {
			return err
		}
		more, err := s.next('}')
		if err != nil || !more {
			return err
		}
	}
}

// str reads a string.
func (s *jsonScanner) str() (string, error) {
	if s.peek() != '"' {
		return "", s.syntax("a string")
	}
	start := s.i
	s.i++
	escaped := false
	for {
		if s.i >= len(s.b) {
			return "", s.syntax("the end of the string")
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			raw := s.b[start:s.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), nil
			}
			var v string
			if err := json.Unmarshal(raw, &v); err != nil {
				return "", formatErr(s.format, s.base+int64(start), ErrMalformed, "invalid JSON string: %v", err)
			}
			return v, nil
		case c == '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				return "", s.syntax("an escape")
			}
			s.i++
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				s.i++
				for range 4 {
					if s.i >= len(s.b) || !isHex(s.b[s.i]) {
						return "", s.syntax("a hex digit")
					}
					s.i++
				}
			default:
				return "", s.syntax("an escape")
			}
		case c < 0x20:
			return "", s.syntax("no control character in a string")
		default:
			s.i++
		}
	}
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number reads a number and returns its text; integer is true when it has
// no fraction or exponent.
func (s *jsonScanner) number() (text []byte, integer bool, err error) {
	s.skipSpace()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && isDigit(s.b[s.i]):
		for s.i < len(s.b) && isDigit(s.b[s.i]) {
			s.i++
		}
	default:
		return nil, false, s.syntax("a number")
	}
	integer = true
	if s.i < len(s.b) && s.b[s.i] == '.' {
		integer = false
		s.i++
		if s.i >= len(s.b) || !isDigit(s.b[s.i]) {
			return nil, false, s.syntax("a digit")
		}
		for s.i < len(s.b) && isDigit(s.b[s.i]) {
			s.i++
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		integer = false
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.i >= len(s.b) || !isDigit(s.b[s.i]) {
			return nil, false, s.syntax("a digit")
		}
		for s.i < len(s.b) && isDigit(s.b[s.i]) {
			s.i++
		}
	}
	return s.b[start:s.i], integer, nil
}

// elements reads an array, calling f for each element (f reads it).
func (s *jsonScanner) elements(f func() error) error {
	if err := s.consume('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := f(); err != nil {
			return err
		}
		more, err := s.next(']')
		if err != nil || !more {
			return err
		}
	}
}

// counts reads an array of integers in [0, MaxInt64]. The result is not
// nil. Errors name the array as what (built only on failure) and the index.
func (s *jsonScanner) counts(what func() string) ([]int64, error) {
	out := make([]int64, 0, 4)
	err := s.elements(func() error {
		at := s.off()
		text, integer, err := s.number()
		if err != nil {
			return err
		}
		var sentinel error
		var problem string
		switch {
		case !integer:
			sentinel, problem = ErrMalformed, "not an integer"
		case text[0] == '-':
			sentinel, problem = ErrOutOfRange, "negative"
		}
		v, perr := strconv.ParseInt(string(text), 10, 64)
		if sentinel == nil && perr != nil {
			sentinel, problem = ErrTooLarge, "too large for int64"
		}
		if sentinel != nil {
			return formatErr(s.format, at, sentinel, "%s[%d] (%s) is %s", what(), len(out), text, problem)
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// skipValue skips any value, checking its syntax.
func (s *jsonScanner) skipValue(depth int) error {
	switch c := s.peek(); {
	case c == '"':
		_, err := s.str()
		return err
	case c == '-' || isDigit(c):
		_, _, err := s.number()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '[' || c == '{':
		if depth >= jsonMaxDepth {
			return s.errorf(ErrTooLarge, "JSON nested more than %d levels deep", jsonMaxDepth)
		}
		s.i++
		closing := byte(']')
		if c == '{' {
			closing = '}'
		}
		if s.peek() == closing {
			s.i++
			return nil
		}
		for {
			if c == '{' {
				if _, err := s.str(); err != nil {
					return err
				}
				if err := s.consume(':'); err != nil {
					return err
				}
			}
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
			more, err := s.next(closing)
			if err != nil || !more {
				return err
			}
		}
	}
	return s.syntax("a value")
}

func (s *jsonScanner) literal(word string) error {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return s.syntax(word)
	}
	s.i += len(word)
	return nil
}
