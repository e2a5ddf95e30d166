package gpu

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	cleanupFake()
	os.Exit(code)
}
