package codecseg

import (
	"reflect"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/dtype"
)

// TestOf: every field the codec has is carried over, and no field of
// codec.Segment is left unset by the conversion (a new field fails here
// until Of fills it).
func TestOf(t *testing.T) {
	in := []checkpoint.Segment{
		{Kind: checkpoint.Opaque, Offset: 0, Length: 8},
		{Kind: checkpoint.Tensor, Name: "w", DType: dtype.BF16, Type: "BF16", Shape: []int64{2, 3}, Offset: 8, Length: 12},
	}
	want := []codec.Segment{
		{Offset: 0, Length: 8},
		{Name: "w", DType: dtype.BF16, Type: "BF16", Shape: []int64{2, 3}, Offset: 8, Length: 12},
	}
	if got := Of(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	full := reflect.ValueOf(Of(in)[1])
	for i := range full.NumField() {
		if full.Field(i).IsZero() {
			t.Errorf("codec.Segment.%s is not set from a tensor segment", full.Type().Field(i).Name)
		}
	}
}
