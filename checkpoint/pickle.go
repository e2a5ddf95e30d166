package checkpoint

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A bounded reader of Python pickles (protocols 0 to 5) that executes
// nothing. Classes and functions (GLOBAL, STACK_GLOBAL, INST) are names, not
// code: REDUCE, NEWOBJ and BUILD record what would have been called, unless
// the caller's hook recognises the function (torch's tensor rebuilders) and
// builds a value of its own; persistent ids go to the caller's
// persistentLoad. The result is a tree of the py* values below.
//
// The pickle is held in memory; every length is checked against the bytes
// left before anything is sliced, and every opcode creates at most one
// value. A value can cost a hundred times the byte that made it (EMPTY_DICT
// is one byte, its pyDict and stack slot over 100), so the machine counts
// the bytes it allocates (slices exactly, the rest by the pickle*Cost
// constants) against a budget in proportion to its input (pickleBudget),
// and stops at a fixed bound of pickleMaxValues values. The machine is a loop, not a
// recursion: nesting costs no stack. Cycles (a list that contains itself)
// are possible, as in Python; walkers must guard against them.
//
// Not supported: the extension registry (EXT1, EXT2, EXT4) and protocol 5
// out-of-band buffers (NEXT_BUFFER, READONLY_BUFFER).

// Values of an unpickled tree. None is nil; bool, int64, float64 and string
// (str) are themselves.
type (
	pyGlobal struct{ Module, Name string } // a class or function, by name
	pyBytes  string                        // bytes or bytearray
	pyBigInt struct{ Len int }             // an int beyond int64 (its byte length)
	pyTuple  struct{ Items []any }
	pyList   struct{ Items []any }
	pySet    struct{ Items []any }

	// pyDict keeps its items in insertion order. Keys of comparable kinds
	// (str, int, bytes, bool, float, None, identities) replace earlier equal
	// keys, as in Python.
	pyDict struct {
		Keys, Vals []any
		State      any // from BUILD (an OrderedDict's attributes)
		index      map[any]int
	}

	// pyObject is the recorded result of REDUCE (Class(*Args)), NEWOBJ
	// (Class.__new__(Class, *Args)), INST or OBJ, with what BUILD, SETITEM(S)
	// and APPEND(S) later gave it.
	pyObject struct {
		Class  any
		Args   any
		KwArgs any
		State  any
		Dict   *pyDict
		List   []any
	}
)

// stateSetter is a value that accepts BUILD.
type stateSetter interface{ setState(state any) }

func (o *pyObject) setState(s any) { o.State = s }
func (d *pyDict) setState(s any)   { d.State = s }

const (
	pickleMaxProto  = 5       // the highest pickle protocol known
	pickleMaxValues = 1 << 23 // values pushed or memoized by one pickle

	// A pickle's values may take pickleBudgetPerByte bytes of memory per
	// byte of its input (the pickle, or the file it came from) plus
	// pickleBudgetBase. Real pickles take 10 to 25 bytes per byte of
	// pickle (torch state dicts, TorchScript data.pkl, constants.pkl and
	// debug pickles), a stream of EMPTY_DICT about 110.
	pickleBudgetPerByte = 64
	pickleBudgetBase    = 1 << 20
)

// Bytes charged against the budget for what Go allocates besides slices
// (whose growth is charged as it happens).
const (
	pickleBoxCost  = 16  // a scalar or string header boxed in an interface
	pickleSeqCost  = 32  // a pyTuple, pyList, pySet or pyGlobal, without its items
	pickleDictCost = 80  // a pyDict, without its items
	pickleObjCost  = 96  // a pyObject
	pickleHookCost = 64  // a value built by a hook (a tensor, a storage reference)
	pickleMapCost  = 256 // a map of up to 8 entries (a dict's index)
	pickleMapEntry = 112 // each entry beyond 8, with the map's growth
)

// pickleBudget returns the memory budget of an input of n bytes.
func pickleBudget(n int64) int64 {
	if n > (maxInt64-pickleBudgetBase)/pickleBudgetPerByte {
		return maxInt64
	}
	return pickleBudgetPerByte*n + pickleBudgetBase
}

// An unpickler reads one pickle.
type unpickler struct {
	b      []byte
	pos    int
	format string // format name for errors
	what   string // name of the pickle for errors ("data.pkl")
	base   int64  // file offset of b[0], or the offset of its compressed data when inflated
	exact  bool   // b[i] is at file offset base+i

	stack  []any
	marks  []int          // stack heights at each MARK
	memo   []any          // memo entries 0 to len-1: picklers number them in order
	far    map[uint64]any // memo entries put beyond the end of memo
	pushes int            // values pushed so far

	// budget bounds mem, the bytes allocated for values so far, and
	// hashed, the bytes of dict keys hashed so far (a key is hashed at
	// every SETITEM: a long one, memoized once, could cost its length
	// for each 4 bytes of pickle); 0 means pickleBudget(len(b)).
	budget int64
	mem    int64
	hashed int64

	// persistentLoad returns the value of a persistent id; when nil,
	// persistent ids are an error.
	persistentLoad func(pid any, at int) (any, error)

	// call may replace REDUCE of a function it recognises: it returns the
	// value and true, or false to let the call be recorded as a pyObject.
	call func(fn any, args *pyTuple, at int) (any, bool, error)
}

// errorf returns a FormatError at byte at of the pickle.
func (u *unpickler) errorf(at int, sentinel error, msg string, args ...any) error {
	off := u.base
	if u.exact {
		off += int64(at)
	}
	return formatErr(u.format, off, sentinel, u.what+" byte "+strconv.Itoa(at)+": "+msg, args...)
}

// load runs the pickle up to STOP and returns the value it leaves.
func (u *unpickler) load() (any, error) {
	if u.budget == 0 {
		u.budget = pickleBudget(int64(len(u.b)))
	}
	for {
		at := u.pos
		if u.pos >= len(u.b) {
			return nil, u.errorf(at, ErrTruncated, "pickle ends without STOP")
		}
		op := u.b[u.pos]
		u.pos++
		if op == '.' { // STOP
			v, err := u.pop(at)
			if err != nil {
				return nil, err
			}
			return v, nil
		}
		if err := u.step(op, at); err != nil {
			return nil, err
		}
		if u.pushes+len(u.memo)+len(u.far) > pickleMaxValues {
			return nil, u.errorf(at, ErrTooLarge, "more than %d values", pickleMaxValues)
		}
		if u.mem > u.budget {
			return nil, u.overBudget(at)
		}
	}
}

func (u *unpickler) overBudget(at int) error {
	return u.errorf(at, ErrTooLarge, "values exceed %d bytes of memory in all", u.budget)
}

// charge adds bytes allocated (mem) and bytes of keys about to be hashed
// (hashed), for work that hooks and SETITEM do, and returns an error at
// byte at beyond the budget.
func (u *unpickler) charge(at int, mem, hashed int64) error {
	u.mem += mem
	u.hashed += hashed
	if u.hashed > u.budget {
		return u.errorf(at, ErrTooLarge, "keys hashed exceed %d bytes in all", u.budget)
	}
	if u.mem > u.budget {
		return u.overBudget(at)
	}
	return nil
}

// step executes one opcode other than STOP.
func (u *unpickler) step(op byte, at int) error {
	switch op {
	case 0x80, 0x95, '(', '0', '1', '2':
		return u.stackOp(op, at)
	case 'N', 0x88, 0x89, 'K', 'M', 'J', 0x8a, 0x8b, 'G', 'I', 'L', 'F', 'X', 0x8c, 0x8d, 'T', 'U', 'B', 'C', 0x8e, 0x96, 'S', 'V':
		return u.scalarOp(op, at)
	case ')', 0x85, 0x86, 0x87, 't', ']', 'l', '}', 'd', 0x8f, 0x91, 'a', 'e', 's', 'u', 0x90:
		return u.containerOp(op, at)
	case 'q', 'r', 'p', 0x94, 'h', 'j', 'g':
		return u.memoOp(op, at)
	case 'c', 0x93, 'R', 0x81, 0x92, 'i', 'o', 'b', 'Q', 'P':
		return u.objectOp(op, at)
	case 0x82, 0x83, 0x84:
		return u.errorf(at, ErrUnsupported, "opcode %s (0x%02x): the extension registry is not supported", pickleOpName(op), op)
	case 0x97, 0x98:
		return u.errorf(at, ErrUnsupported, "opcode %s (0x%02x): out-of-band buffers are not supported", pickleOpName(op), op)
	default:
		return u.errorf(at, ErrMalformed, "unknown pickle opcode 0x%02x", op)
	}
}

// stackOp executes the protocol, framing and stack opcodes.
func (u *unpickler) stackOp(op byte, at int) error {
	switch op {
	case 0x80: // PROTO
		v, err := u.bytes(1, at)
		if err != nil {
			return err
		}
		if v[0] > pickleMaxProto {
			return u.errorf(at, ErrUnsupported, "pickle protocol %d", v[0])
		}
	case 0x95: // FRAME: a hint for buffered readers
		v, err := u.bytes(8, at)
		if err != nil {
			return err
		}
		if n := binary.LittleEndian.Uint64(v); n > uint64(len(u.b)-u.pos) {
			return u.errorf(at, ErrTruncated, "frame of %d bytes runs past the end of the pickle", n)
		}
	case '(': // MARK
		u.marks = pickleAppend(u, 8, u.marks, len(u.stack))
	case '0': // POP
		if len(u.stack) > u.floor() {
			u.stack = u.stack[:len(u.stack)-1]
		} else if _, err := u.popMark(at); err != nil {
			return err
		}
	case '1': // POP_MARK
		if _, err := u.popMark(at); err != nil {
			return err
		}
	case '2': // DUP
		v, err := u.top(at)
		if err != nil {
			return err
		}
		u.pushAgain(v)
	default:
		return u.errorf(at, ErrMalformed, "unknown pickle opcode 0x%02x", op)
	}
	return nil
}

// scalarOp executes the opcodes that push a scalar: None, booleans, integers, floats, strings, bytes.
func (u *unpickler) scalarOp(op byte, at int) error {
	switch op {
	case 'N': // NONE
		u.push(nil)
	case 0x88: // NEWTRUE
		u.push(true)
	case 0x89: // NEWFALSE
		u.push(false)
	case 'K': // BININT1
		v, err := u.bytes(1, at)
		if err != nil {
			return err
		}
		u.push(int64(v[0]))
	case 'M': // BININT2
		v, err := u.bytes(2, at)
		if err != nil {
			return err
		}
		u.push(int64(binary.LittleEndian.Uint16(v)))
	case 'J': // BININT
		v, err := u.bytes(4, at)
		if err != nil {
			return err
		}
		u.push(int64(int32(binary.LittleEndian.Uint32(v))))
	case 0x8a: // LONG1
		n, err := u.bytes(1, at)
		if err != nil {
			return err
		}
		return u.long(int(n[0]), at)
	case 0x8b: // LONG4
		n, err := u.length(4, at)
		if err != nil {
			return err
		}
		return u.long(n, at)
	case 'G': // BINFLOAT
		v, err := u.bytes(8, at)
		if err != nil {
			return err
		}
		u.push(math.Float64frombits(binary.BigEndian.Uint64(v)))
	case 'I', 'L': // INT, LONG (text)
		line, err := u.line(at)
		if err != nil {
			return err
		}
		if op == 'I' && (line == "00" || line == "01") {
			u.push(line == "01")
			break
		}
		s := strings.TrimSuffix(line, "L")
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			if ne := err.(*strconv.NumError); ne.Err != strconv.ErrRange {
				return u.errorf(at, ErrMalformed, "bad integer %q", line)
			}
			u.push(pyBigInt{Len: len(s)})
			break
		}
		u.push(v)
	case 'F': // FLOAT (text)
		line, err := u.line(at)
		if err != nil {
			return err
		}
		v, err := strconv.ParseFloat(line, 64)
		if err != nil {
			return u.errorf(at, ErrMalformed, "bad float %q", line)
		}
		u.push(v)
	case 'X', 0x8c, 0x8d: // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8
		n, err := u.length(pickleLenSize(op), at)
		if err != nil {
			return err
		}
		v, err := u.bytes(n, at)
		if err != nil {
			return err
		}
		if !utf8.Valid(v) {
			return u.errorf(at, ErrMalformed, "string is not valid UTF-8")
		}
		u.push(string(v))
	case 'T', 'U': // BINSTRING, SHORT_BINSTRING (Python 2 str, loaded as str)
		n, err := u.length(pickleLenSize(op), at)
		if err != nil {
			return err
		}
		v, err := u.bytes(n, at)
		if err != nil {
			return err
		}
		u.push(string(v))
	case 'B', 'C', 0x8e, 0x96: // BINBYTES, SHORT_BINBYTES, BINBYTES8, BYTEARRAY8
		n, err := u.length(pickleLenSize(op), at)
		if err != nil {
			return err
		}
		v, err := u.bytes(n, at)
		if err != nil {
			return err
		}
		u.push(pyBytes(v))
	case 'S': // STRING (text, a quoted Python 2 literal)
		line, err := u.line(at)
		if err != nil {
			return err
		}
		if len(line) < 2 || (line[0] != '\'' && line[0] != '"') || line[len(line)-1] != line[0] {
			return u.errorf(at, ErrMalformed, "STRING argument is not quoted")
		}
		u.push(pyUnescape(line[1:len(line)-1], false))
	case 'V': // UNICODE (text, raw-unicode-escape)
		line, err := u.line(at)
		if err != nil {
			return err
		}
		u.push(pyUnescape(line, true))
	default:
		return u.errorf(at, ErrMalformed, "unknown pickle opcode 0x%02x", op)
	}
	return nil
}

// containerOp executes the opcodes that build tuples, lists, dicts and sets.
func (u *unpickler) containerOp(op byte, at int) error {
	switch op {
	case ')': // EMPTY_TUPLE
		u.push(&pyTuple{})
	case 0x85, 0x86, 0x87: // TUPLE1, TUPLE2, TUPLE3
		n := int(op-0x85) + 1
		if len(u.stack)-u.floor() < n {
			return u.errorf(at, ErrMalformed, "stack underflow")
		}
		items := make([]any, n)
		copy(items, u.stack[len(u.stack)-n:])
		u.stack = u.stack[:len(u.stack)-n]
		u.mem += 16 * int64(n)
		u.push(&pyTuple{Items: items})
	case 't': // TUPLE
		items, err := u.popMark(at)
		if err != nil {
			return err
		}
		u.push(&pyTuple{Items: items})
	case ']': // EMPTY_LIST
		u.push(&pyList{})
	case 'l': // LIST
		items, err := u.popMark(at)
		if err != nil {
			return err
		}
		u.push(&pyList{Items: items})
	case '}': // EMPTY_DICT
		u.push(&pyDict{})
	case 'd': // DICT
		items, err := u.popMark(at)
		if err != nil {
			return err
		}
		d := &pyDict{}
		if err := u.setItems(d, items, at); err != nil {
			return err
		}
		u.push(d)
	case 0x8f: // EMPTY_SET
		u.push(&pySet{})
	case 0x91: // FROZENSET
		items, err := u.popMark(at)
		if err != nil {
			return err
		}
		u.push(&pySet{Items: items})
	case 'a': // APPEND
		v, err := u.pop(at)
		if err != nil {
			return err
		}
		return u.appendTo(at, v)
	case 'e': // APPENDS
		items, err := u.popMark(at)
		if err != nil {
			return err
		}
		return u.appendTo(at, items...)
	case 's': // SETITEM
		k, v, err := u.pop2(at)
		if err != nil {
			return err
		}
		return u.setItemsOnTop(at, []any{k, v})
	case 'u': // SETITEMS
		items, err := u.popMark(at)
		if err != nil {
			return err
		}
		return u.setItemsOnTop(at, items)
	case 0x90: // ADDITEMS
		items, err := u.popMark(at)
		if err != nil {
			return err
		}
		t, err := u.top(at)
		if err != nil {
			return err
		}
		s, ok := t.(*pySet)
		if !ok {
			return u.errorf(at, ErrMalformed, "ADDITEMS on %s", pyTypeName(t))
		}
		s.Items = u.append(s.Items, items...)
	default:
		return u.errorf(at, ErrMalformed, "unknown pickle opcode 0x%02x", op)
	}
	return nil
}

// memoOp executes the memo opcodes.
func (u *unpickler) memoOp(op byte, at int) error {
	switch op {
	case 'q', 'r', 'p': // BINPUT, LONG_BINPUT, PUT
		idx, err := u.memoIndex(op, at)
		if err != nil {
			return err
		}
		v, err := u.top(at)
		if err != nil {
			return err
		}
		u.put(idx, v)
	case 0x94: // MEMOIZE
		v, err := u.top(at)
		if err != nil {
			return err
		}
		u.put(uint64(len(u.memo)+len(u.far)), v)
	case 'h', 'j', 'g': // BINGET, LONG_BINGET, GET
		idx, err := u.memoIndex(op, at)
		if err != nil {
			return err
		}
		v, ok := u.get(idx)
		if !ok {
			return u.errorf(at, ErrMalformed, "memo key %d not found", idx)
		}
		u.pushAgain(v)
	default:
		return u.errorf(at, ErrMalformed, "unknown pickle opcode 0x%02x", op)
	}
	return nil
}

// objectOp executes the opcodes that name and build objects: globals, reduce, new, build, persistent IDs.
func (u *unpickler) objectOp(op byte, at int) error {
	switch op {
	case 'c': // GLOBAL
		module, err := u.line(at)
		if err != nil {
			return err
		}
		name, err := u.line(at)
		if err != nil {
			return err
		}
		u.push(&pyGlobal{Module: module, Name: name})
	case 0x93: // STACK_GLOBAL
		module, name, err := u.pop2(at)
		if err != nil {
			return err
		}
		m, ok1 := module.(string)
		n, ok2 := name.(string)
		if !ok1 || !ok2 {
			return u.errorf(at, ErrMalformed, "STACK_GLOBAL needs two strings, got %s and %s", pyTypeName(module), pyTypeName(name))
		}
		u.push(&pyGlobal{Module: m, Name: n})
	case 'R': // REDUCE
		fn, args, err := u.pop2(at)
		if err != nil {
			return err
		}
		t, ok := args.(*pyTuple)
		if !ok {
			return u.errorf(at, ErrMalformed, "REDUCE arguments are %s, not a tuple", pyTypeName(args))
		}
		v, err := u.reduce(fn, t, at)
		if err != nil {
			return err
		}
		u.push(v)
	case 0x81: // NEWOBJ
		cls, args, err := u.pop2(at)
		if err != nil {
			return err
		}
		u.push(&pyObject{Class: cls, Args: args})
	case 0x92: // NEWOBJ_EX
		args, kw, err := u.pop2(at)
		if err != nil {
			return err
		}
		cls, err := u.pop(at)
		if err != nil {
			return err
		}
		u.push(&pyObject{Class: cls, Args: args, KwArgs: kw})
	case 'i': // INST
		module, err := u.line(at)
		if err != nil {
			return err
		}
		name, err := u.line(at)
		if err != nil {
			return err
		}
		items, err := u.popMark(at)
		if err != nil {
			return err
		}
		u.mem += 2 * pickleSeqCost // its class and arguments
		u.push(&pyObject{Class: &pyGlobal{Module: module, Name: name}, Args: &pyTuple{Items: items}})
	case 'o': // OBJ
		items, err := u.popMark(at)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return u.errorf(at, ErrMalformed, "OBJ without a class")
		}
		u.mem += pickleSeqCost // its arguments
		u.push(&pyObject{Class: items[0], Args: &pyTuple{Items: items[1:]}})
	case 'b': // BUILD
		state, err := u.pop(at)
		if err != nil {
			return err
		}
		t, err := u.top(at)
		if err != nil {
			return err
		}
		s, ok := t.(stateSetter)
		if !ok {
			return u.errorf(at, ErrMalformed, "BUILD on %s", pyTypeName(t))
		}
		s.setState(state)
	case 'Q', 'P': // BINPERSID, PERSID
		var pid any
		if op == 'P' {
			line, err := u.line(at)
			if err != nil {
				return err
			}
			pid = line
		} else {
			v, err := u.pop(at)
			if err != nil {
				return err
			}
			pid = v
		}
		if u.persistentLoad == nil {
			return u.errorf(at, ErrUnsupported, "persistent id in a pickle that allows none")
		}
		v, err := u.persistentLoad(pid, at)
		if err != nil {
			return err
		}
		u.push(v)
	default:
		return u.errorf(at, ErrMalformed, "unknown pickle opcode 0x%02x", op)
	}
	return nil
}

// reduce records fn(*args), or lets the hook build the value.
func (u *unpickler) reduce(fn any, args *pyTuple, at int) (any, error) {
	if u.call != nil {
		v, ok, err := u.call(fn, args, at)
		if err != nil || ok {
			return v, err
		}
	}
	return &pyObject{Class: fn, Args: args}, nil
}

// push pushes a value just made, and charges its memory.
func (u *unpickler) push(v any) {
	u.mem += pyCost(v)
	u.pushAgain(v)
}

// pushAgain pushes a value that is already held elsewhere (DUP, GET).
func (u *unpickler) pushAgain(v any) {
	u.stack = u.append(u.stack, v)
	u.pushes++
}

// append appends items to s.
func (u *unpickler) append(s []any, items ...any) []any {
	return pickleAppend(u, 16, s, items...)
}

// pickleAppend appends items to s, whose elements take size bytes, and
// charges what growing s allocates. It doubles the capacity (append grows
// large slices by a quarter, which allocates five times their final size
// in all), or grows s just enough when the budget has no room for that.
// When it has no room at all, s is left as it is and the pickle fails
// after the current opcode: nothing is allocated beyond the budget.
func pickleAppend[T any](u *unpickler, size int64, s []T, items ...T) []T {
	n := len(s) + len(items)
	if n <= cap(s) {
		return append(s, items...)
	}
	c := max(n, 2*cap(s))
	if u.mem+size*int64(c) > u.budget {
		c = n
	}
	u.mem += size * int64(c)
	if u.mem > u.budget {
		return s
	}
	t := make([]T, len(s), c)
	copy(t, s)
	return append(t, items...)
}

// pyCost returns the bytes allocated for a new value, without the items
// of a container (they are charged as they are added).
func pyCost(v any) int64 {
	switch x := v.(type) {
	case nil, bool:
		return 0
	case string:
		return pickleBoxCost + int64(len(x))
	case pyBytes:
		return pickleBoxCost + int64(len(x))
	case int64, float64, pyBigInt:
		return pickleBoxCost
	case *pyTuple, *pyList, *pySet, *pyGlobal:
		return pickleSeqCost // items made by popMark or TUPLE1-3 are charged there
	case *pyDict:
		return pickleDictCost
	case *pyObject:
		return pickleObjCost
	}
	return pickleHookCost
}

// floor returns the stack height at the innermost MARK: values below it
// belong to an outer frame and cannot be popped.
func (u *unpickler) floor() int {
	if len(u.marks) == 0 {
		return 0
	}
	return u.marks[len(u.marks)-1]
}

// pop2 pops the top two values and returns them in stack order (the one
// below first).
func (u *unpickler) pop2(at int) (below, top any, err error) {
	if top, err = u.pop(at); err != nil {
		return nil, nil, err
	}
	if below, err = u.pop(at); err != nil {
		return nil, nil, err
	}
	return below, top, nil
}

func (u *unpickler) pop(at int) (any, error) {
	if len(u.stack) <= u.floor() {
		return nil, u.errorf(at, ErrMalformed, "stack underflow")
	}
	v := u.stack[len(u.stack)-1]
	u.stack = u.stack[:len(u.stack)-1]
	return v, nil
}

func (u *unpickler) top(at int) (any, error) {
	if len(u.stack) <= u.floor() {
		return nil, u.errorf(at, ErrMalformed, "stack underflow")
	}
	return u.stack[len(u.stack)-1], nil
}

// popMark pops the values above the innermost MARK, and the MARK.
func (u *unpickler) popMark(at int) ([]any, error) {
	if len(u.marks) == 0 {
		return nil, u.errorf(at, ErrMalformed, "no MARK on the stack")
	}
	m := u.marks[len(u.marks)-1]
	u.marks = u.marks[:len(u.marks)-1]
	items := make([]any, len(u.stack)-m)
	copy(items, u.stack[m:])
	u.stack = u.stack[:m]
	u.mem += 16 * int64(len(items))
	return items, nil
}

func (u *unpickler) appendTo(at int, items ...any) error {
	t, err := u.top(at)
	if err != nil {
		return err
	}
	switch x := t.(type) {
	case *pyList:
		x.Items = u.append(x.Items, items...)
	case *pyObject:
		x.List = u.append(x.List, items...)
	default:
		return u.errorf(at, ErrMalformed, "APPEND to %s", pyTypeName(t))
	}
	return nil
}

func (u *unpickler) setItemsOnTop(at int, kv []any) error {
	t, err := u.top(at)
	if err != nil {
		return err
	}
	switch x := t.(type) {
	case *pyDict:
		return u.setItems(x, kv, at)
	case *pyObject:
		if x.Dict == nil {
			x.Dict = &pyDict{}
			u.mem += pickleDictCost
		}
		return u.setItems(x.Dict, kv, at)
	}
	return u.errorf(at, ErrMalformed, "SETITEM on %s", pyTypeName(t))
}

func (u *unpickler) setItems(d *pyDict, kv []any, at int) error {
	if len(kv)%2 != 0 {
		return u.errorf(at, ErrMalformed, "odd number of values (%d) for dict items", len(kv))
	}
	for i := 0; i < len(kv); i += 2 {
		if u.mem > u.budget {
			return u.overBudget(at) // d may lack the last item's value
		}
		var n int
		switch k := kv[i].(type) {
		case string:
			n = len(k)
		case pyBytes:
			n = len(k)
		}
		if err := u.charge(at, 0, int64(n)); err != nil {
			return err
		}
		u.setItem(d, kv[i], kv[i+1])
	}
	return nil
}

// setItem sets d[k] to v. Keys of comparable kinds replace an equal key.
func (u *unpickler) setItem(d *pyDict, k, v any) {
	switch k.(type) {
	case nil, bool, int64, float64, string, pyBytes, *pyGlobal, *pyTuple, *pyList, *pyDict, *pySet, *pyObject:
		if d.index == nil {
			d.index = make(map[any]int)
			u.mem += pickleMapCost
		}
		if i, ok := d.index[k]; ok {
			d.Vals[i] = v
			return
		}
		if len(d.index) >= 8 {
			u.mem += pickleMapEntry
		}
		d.index[k] = len(d.Keys)
	}
	d.Keys = u.append(d.Keys, k)
	d.Vals = u.append(d.Vals, v)
}

// bytes returns the next n bytes of the pickle.
func (u *unpickler) bytes(n, at int) ([]byte, error) {
	if n < 0 || n > len(u.b)-u.pos {
		return nil, u.errorf(at, ErrTruncated, "opcode %s needs %d bytes, %d left", pickleOpName(u.b[at]), n, len(u.b)-u.pos)
	}
	v := u.b[u.pos : u.pos+n]
	u.pos += n
	return v, nil
}

// length reads an unsigned little-endian length of size bytes and checks
// that that many bytes are left.
func (u *unpickler) length(size, at int) (int, error) {
	v, err := u.bytes(size, at)
	if err != nil {
		return 0, err
	}
	var n uint64
	switch size {
	case 1:
		n = uint64(v[0])
	case 4:
		n = uint64(binary.LittleEndian.Uint32(v))
	case 8:
		n = binary.LittleEndian.Uint64(v)
	}
	if n > uint64(len(u.b)-u.pos) {
		return 0, u.errorf(at, ErrTooLarge, "opcode %s: length %d exceeds the %d bytes left in the pickle", pickleOpName(u.b[at]), n, len(u.b)-u.pos)
	}
	return int(n), nil
}

// long pushes an n-byte little-endian two's complement integer.
func (u *unpickler) long(n, at int) error {
	v, err := u.bytes(n, at)
	if err != nil {
		return err
	}
	if n > 8 {
		u.push(pyBigInt{Len: n})
		return nil
	}
	var x uint64
	for i := n - 1; i >= 0; i-- {
		x = x<<8 | uint64(v[i])
	}
	if n > 0 && n < 8 && v[n-1]&0x80 != 0 {
		x |= ^uint64(0) << (8 * n) // sign extension
	}
	u.push(int64(x))
	return nil
}

// line returns the text up to the next newline, without it.
func (u *unpickler) line(at int) (string, error) {
	i := bytes.IndexByte(u.b[u.pos:], '\n')
	if i < 0 {
		return "", u.errorf(at, ErrTruncated, "opcode %s: no newline before the end of the pickle", pickleOpName(u.b[at]))
	}
	s := string(u.b[u.pos : u.pos+i])
	u.pos += i + 1
	u.mem += int64(i)
	return s, nil
}

// put stores v in the memo under idx. Entries are numbered as in Python:
// MEMOIZE takes the number of entries as its index.
func (u *unpickler) put(idx uint64, v any) {
	switch {
	case idx < uint64(len(u.memo)):
		u.memo[idx] = v
	case idx == uint64(len(u.memo)):
		u.memo = u.append(u.memo, v)
		// entries put out of order join memo once it reaches them
		for len(u.far) > 0 {
			w, ok := u.far[uint64(len(u.memo))]
			if !ok {
				break
			}
			delete(u.far, uint64(len(u.memo)))
			u.memo = u.append(u.memo, w)
		}
	default:
		if u.far == nil {
			u.far = make(map[uint64]any)
			u.mem += pickleMapCost
		}
		if _, ok := u.far[idx]; !ok && len(u.far) >= 8 {
			u.mem += pickleMapEntry
		}
		u.far[idx] = v
	}
}

// get returns the memo entry idx.
func (u *unpickler) get(idx uint64) (any, bool) {
	if idx < uint64(len(u.memo)) {
		return u.memo[idx], true
	}
	v, ok := u.far[idx]
	return v, ok
}

// memoIndex reads the memo index of a PUT or GET opcode.
func (u *unpickler) memoIndex(op byte, at int) (uint64, error) {
	switch op {
	case 'q', 'h':
		v, err := u.bytes(1, at)
		if err != nil {
			return 0, err
		}
		return uint64(v[0]), nil
	case 'r', 'j':
		v, err := u.bytes(4, at)
		if err != nil {
			return 0, err
		}
		return uint64(binary.LittleEndian.Uint32(v)), nil
	}
	line, err := u.line(at)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(line, 10, 64)
	if err != nil {
		return 0, u.errorf(at, ErrMalformed, "bad memo index %q", line)
	}
	return v, nil
}

// pickleLenSize returns the size of the length field of a string opcode.
func pickleLenSize(op byte) int {
	switch op {
	case 'C', 'U', 0x8c:
		return 1
	case 0x8d, 0x8e, 0x96:
		return 8
	}
	return 4 // 'B', 'T', 'X'
}

// pyUnescape decodes the backslash escapes of a protocol 0 STRING (Python
// repr: \\ \' \" \n \r \t \xHH) or UNICODE (raw-unicode-escape: \uXXXX,
// \UXXXXXXXX, other bytes Latin-1) argument. Unknown escapes stay as they
// are.
func pyUnescape(s string, unicode bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			if unicode {
				b.WriteRune(rune(c))
			} else {
				b.WriteByte(c)
			}
			continue
		}
		e := s[i+1]
		digits := 0
		switch {
		case unicode && e == 'u':
			digits = 4
		case unicode && e == 'U':
			digits = 8
		case !unicode && e == 'x':
			digits = 2
		case !unicode:
			if r := strings.IndexByte("\\'\"nrt", e); r >= 0 {
				b.WriteByte("\\'\"\n\r\t"[r])
				i++
				continue
			}
		}
		if digits > 0 && i+2+digits <= len(s) {
			if v, err := strconv.ParseUint(s[i+2:i+2+digits], 16, 32); err == nil {
				if unicode {
					b.WriteRune(rune(v))
				} else {
					b.WriteByte(byte(v))
				}
				i += 1 + digits
				continue
			}
		}
		if unicode {
			b.WriteRune('\\')
		} else {
			b.WriteByte('\\')
		}
	}
	return b.String()
}

// pyTypeName names the Python type of an unpickled value, for errors.
func pyTypeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		return "bool"
	case int64, pyBigInt:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case pyBytes:
		return "bytes"
	case *pyTuple:
		return "tuple"
	case *pyList:
		return "list"
	case *pyDict:
		return "dict"
	case *pySet:
		return "set"
	case *pyGlobal:
		return x.Module + "." + x.Name
	case *pyObject:
		if g, ok := x.Class.(*pyGlobal); ok {
			return g.Module + "." + g.Name + " object"
		}
		return "object"
	}
	return "value"
}

// pickleOpName names an opcode for errors.
func pickleOpName(op byte) string {
	if n, ok := pickleOpNames[op]; ok {
		return n
	}
	return "0x" + strconv.FormatUint(uint64(op), 16)
}

var pickleOpNames = map[byte]string{
	'(': "MARK", '.': "STOP", '0': "POP", '1': "POP_MARK", '2': "DUP", 'F': "FLOAT", 'I': "INT",
	'J': "BININT", 'K': "BININT1", 'L': "LONG", 'M': "BININT2", 'N': "NONE", 'P': "PERSID",
	'Q': "BINPERSID", 'R': "REDUCE", 'S': "STRING", 'T': "BINSTRING", 'U': "SHORT_BINSTRING",
	'V': "UNICODE", 'X': "BINUNICODE", 'a': "APPEND", 'b': "BUILD", 'c': "GLOBAL", 'd': "DICT",
	'}': "EMPTY_DICT", 'e': "APPENDS", 'g': "GET", 'h': "BINGET", 'i': "INST", 'j': "LONG_BINGET",
	'l': "LIST", ']': "EMPTY_LIST", 'o': "OBJ", 'p': "PUT", 'q': "BINPUT", 'r': "LONG_BINPUT",
	's': "SETITEM", 't': "TUPLE", ')': "EMPTY_TUPLE", 'u': "SETITEMS", 'G': "BINFLOAT",
	'B': "BINBYTES", 'C': "SHORT_BINBYTES",
	0x80: "PROTO", 0x81: "NEWOBJ", 0x82: "EXT1", 0x83: "EXT2", 0x84: "EXT4", 0x85: "TUPLE1",
	0x86: "TUPLE2", 0x87: "TUPLE3", 0x88: "NEWTRUE", 0x89: "NEWFALSE", 0x8a: "LONG1", 0x8b: "LONG4",
	0x8c: "SHORT_BINUNICODE", 0x8d: "BINUNICODE8", 0x8e: "BINBYTES8", 0x8f: "EMPTY_SET",
	0x90: "ADDITEMS", 0x91: "FROZENSET", 0x92: "NEWOBJ_EX", 0x93: "STACK_GLOBAL", 0x94: "MEMOIZE",
	0x95: "FRAME", 0x96: "BYTEARRAY8", 0x97: "NEXT_BUFFER", 0x98: "READONLY_BUFFER",
}
