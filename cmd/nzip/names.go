package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// shown is a name read from a file (a tensor, a frame, a file inside an
// archive, a setup's source) as text output prints it: as it is when every
// rune is printable, else quoted with Go escapes (strconv.Quote), so that a
// hostile name cannot set the terminal's title, move the cursor or rewrite
// lines ("\x1b]0;pwned\x07", "\r"). JSON output keeps names exact.
func shown(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// termSafe escapes what in s a terminal would act on (control characters,
// other than newlines and tabs, and invisible format characters such as
// bidirectional overrides) for messages that may quote names from a file:
// errors and warnings.
func termSafe(s string) string {
	ok := true
	for _, r := range s {
		if r != '\n' && r != '\t' && (r == utf8.RuneError || !strconv.IsGraphic(r)) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, n := utf8.DecodeRuneInString(s[i:])
		w = n
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t' || strconv.IsGraphic(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}
