package codec

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"neuralzip/checkpoint"
)

// BenchmarkSearchCost splits what -search N costs a model's compression
// (one thread; docs/programs.md, "Search", counts its instructions under
// callgrind with -test.benchtime=1x): encode is the archive without a
// search, search the search alone (its samples and checks), picks the
// archive coded with the search's winners given (what the chosen
// programs cost by themselves, with no search: the floor of any search
// that finds them). NZ_SEARCH_FILE names the model (default
// stories260K's f32 safetensors in ../shared), NZ_SEARCH the budget
// (default 2). none reads the model only: the baseline of the counts.
func BenchmarkSearchCost(b *testing.B) {
	path := os.Getenv("NZ_SEARCH_FILE")
	if path == "" {
		path = filepath.Join(needShared(b), "hub/stories260K/base/model.f32.safetensors")
	}
	budget := 2
	if s := os.Getenv("NZ_SEARCH"); s != "" {
		var err error
		if budget, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	m, err := checkpoint.OpenPath(path)
	if err != nil {
		b.Skip(err)
	}
	src, err := os.ReadFile(m.Files[0].Path)
	if err != nil {
		b.Fatal(err)
	}
	var segs []Segment
	for _, g := range m.Files[0].Layout.Segments {
		segs = append(segs, Segment{Offset: g.Offset, Length: g.Length, Name: g.Name, DType: g.DType, Type: g.Type, Shape: g.Shape})
	}
	in := []Input{{Name: "m", R: memArchive(src), Size: int64(len(src)), Segments: segs}}
	opt := EncodeOptions{Threads: 1, Search: budget}
	ctx := context.Background()
	var picks []map[string]pick
	for _, mode := range []string{"none", "encode", "search", "picks"} {
		b.Run(mode, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for range b.N {
				switch mode {
				case "encode":
					if _, err := Encode(ctx, io.Discard, in, EncodeOptions{Threads: 1}); err != nil {
						b.Fatal(err)
					}
				case "search":
					if picks, _, err = searchInputs(ctx, in, opt); err != nil {
						b.Fatal(err)
					}
				case "picks":
					if picks == nil && mode == "picks" {
						b.StopTimer()
						if picks, _, err = searchInputs(ctx, in, opt); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					if _, err := Encode(ctx, io.Discard, in, EncodeOptions{Threads: 1, picks: picks}); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
