// Command nzlab holds the codec's measurement harnesses: runs that print
// numbers for docs/ and for A/B comparisons of codec changes, not tests
// (nothing here can fail a build). Each subcommand says what it measures:
//
//	nzlab icount [-chunk N] [-setup FILE|gaussian] [-th X|default] [-ops none|enc|encdec] [-repeat N] FILE...
//	nzlab setup -o OUT.nzsetup [-chunk N] [-k K] [-pair-bias X] FILE
//	nzlab setup-sweep [-shared DIR]
//	nzlab traj-measure [-shared DIR] [-kind bf16,f32,optim]
//	nzlab traj-ratio [-shared DIR] [-runs N] [-mode prev|key]
//	nzlab traj-floor [-shared DIR]
//	nzlab sparse FILE...
//	nzlab infer-speed [-shared DIR] [-runs N]
//	nzlab store-numbers [-shared DIR] [-order] [-repack] [-max-decode R,...]
//	nzlab store-scale [-shared DIR] [-models N] [-exhaustive=false]
//
// scripts/icount.sh runs icount under callgrind; docs/setups.md,
// docs/trajectories.md, docs/inference.md and docs/store.md name the
// others' commands.
package main

import (
	"fmt"
	"os"
)

func main() {
	cmds := map[string]func([]string) error{
		"icount":        runICount,
		"setup":         runSetup,
		"setup-sweep":   runSetupSweep,
		"traj-measure":  runTrajMeasure,
		"traj-ratio":    runTrajRatio,
		"traj-floor":    runTrajFloor,
		"sparse":        runSparse,
		"infer-speed":   runInferSpeed,
		"store-numbers": runStoreNumbers,
		"store-scale":   runStoreScale,
	}
	if len(os.Args) < 2 || cmds[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: nzlab icount|setup|setup-sweep|traj-measure|traj-ratio|traj-floor|sparse|infer-speed|store-numbers|store-scale [flags] (nzlab CMD -h for each)")
		os.Exit(2)
	}
	if err := cmds[os.Args[1]](os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "nzlab:", err)
		os.Exit(1)
	}
}
