package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// checkOutputNames checks, before anything is written, that the files
// names (slash-separated, from an archive) can be written into dir:
// safe (safeName), distinct, no name a directory of another ("a" and
// "a/b"), no symbolic link or non-directory where a name needs a
// directory below dir, and, unless force, nothing at any of them yet.
// archive prefixes the errors that concern the archive's names.
func checkOutputNames(archive, dir string, names []string, force bool) error {
	seen := map[string]bool{}
	for _, n := range names {
		if err := safeName(n); err != nil {
			return fmt.Errorf("%s: %w", archive, err)
		}
		if seen[n] {
			return fmt.Errorf("%s: holds two files named %q", archive, n)
		}
		seen[n] = true
	}
	for _, n := range names {
		for d := path.Dir(n); d != "."; d = path.Dir(d) {
			if seen[d] {
				return fmt.Errorf("%s: holds a file %q and a file %q inside it; one name cannot be both a file and a directory", archive, d, n)
			}
		}
	}
	for _, n := range names {
		if err := subdirs(dir, n, nil); err != nil {
			return err
		}
		dest := filepath.Join(dir, filepath.FromSlash(n))
		st, err := os.Lstat(dest)
		switch {
		case err != nil:
		case !force:
			return fmt.Errorf("%s: already exists (use -f to overwrite)", dest)
		case !st.Mode().IsRegular() && st.Mode()&os.ModeSymlink == 0:
			return fmt.Errorf("%s: exists and is not a regular file", dest)
		}
	}
	return nil
}

// subdirs walks the directories that name (slash-separated, checked by
// safeName) needs below dir: a symbolic link there is refused (nzip never
// writes through one: it could lead out of dir), as is anything that is
// not a directory. With made nil it only checks, stopping at the first
// directory missing; else it makes the missing ones, appending each to
// *made, so that a failure can remove exactly what it made.
func subdirs(dir, name string, made *[]string) error {
	d := dir
	parts := strings.Split(name, "/")
	for _, c := range parts[:len(parts)-1] {
		d = filepath.Join(d, c)
		st, err := os.Lstat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist) && made == nil:
			return nil
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(d, 0o755); err != nil {
				return err
			}
			*made = append(*made, d)
		case err != nil:
			return err
		case st.Mode()&(os.ModeSymlink|os.ModeIrregular) != 0:
			return fmt.Errorf("%s: is a symbolic link (or junction); nzip does not write through links below the output directory %s", d, dir)
		case !st.IsDir():
			return fmt.Errorf("%s: exists and is not a directory", d)
		}
	}
	return nil
}

// mkdirAll is os.MkdirAll, making one directory at a time and appending
// each it made to *made.
func mkdirAll(dir string, made *[]string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		missing = append(missing, d)
	}
	for k := len(missing) - 1; k >= 0; k-- {
		if err := os.Mkdir(missing[k], 0o755); err != nil {
			if st, serr := os.Stat(missing[k]); serr == nil && st.IsDir() {
				continue // made meanwhile, by someone else
			}
			return err
		}
		*made = append(*made, missing[k])
	}
	return nil
}

// removeMade removes the directories in made, last first, each only when
// empty.
func removeMade(made []string) {
	for k := len(made) - 1; k >= 0; k-- {
		os.Remove(made[k])
	}
}
