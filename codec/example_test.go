package codec_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"math"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// A BF16 tensor of 4096 values after a 16-byte opaque header.
func exampleFile() ([]byte, []codec.Segment) {
	file := []byte("sixteen byte hdr")
	for i := 0; i < 4096; i++ {
		x := float32(math.Sin(float64(i)) * 0.02)
		file = binary.LittleEndian.AppendUint16(file, uint16(math.Float32bits(x)>>16))
	}
	return file, []codec.Segment{
		{Offset: 0, Length: 16},
		{Name: "layer.weight", DType: dtype.BF16, Shape: []int64{64, 64}, Offset: 16, Length: 8192},
	}
}

func ExampleEncode() {
	file, segs := exampleFile()
	var archive bytes.Buffer
	res, err := codec.Encode(context.Background(), &archive, []codec.Input{{Name: "model.bin", R: bytes.NewReader(file), Size: int64(len(file)), Segments: segs}}, codec.EncodeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Original, "bytes in, smaller out:", res.Compressed < res.Original)

	var restored bytes.Buffer
	if err := codec.Decode(context.Background(), &restored, bytes.NewReader(archive.Bytes()), int64(archive.Len()), codec.DecodeOptions{}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("bit-exact:", bytes.Equal(restored.Bytes(), file))
	// Output:
	// 8208 bytes in, smaller out: true
	// bit-exact: true
}

func ExampleReader_Tensor() {
	file, segs := exampleFile()
	archive, err := codec.CompressBytes(context.Background(), file, segs, codec.EncodeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	rd, err := codec.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		log.Fatal(err)
	}
	defer rd.Close()
	data, info, err := rd.Tensor("layer.weight")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.Name, info.DType, info.Shape, len(data), bytes.Equal(data, file[16:]))
	// Output: layer.weight BF16 [64 64] 8192 true
}

func ExampleReader_Verify() {
	file, segs := exampleFile()
	archive, _ := codec.CompressBytes(context.Background(), file, segs, codec.EncodeOptions{})
	archive[100] ^= 1 // damage one payload byte
	rd, err := codec.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		log.Fatal(err)
	}
	defer rd.Close()
	err = rd.Verify(context.Background(), codec.DecodeOptions{})
	var ce *codec.CorruptError
	if errors.As(err, &ce) {
		fmt.Println("damaged block", ce.Block, "of", ce.File)
	}
	// Output: damaged block 1 of model.bin
}
