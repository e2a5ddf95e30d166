package serve

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"neuralzip/store"
)

// openStoreAll opens a store as one tree (nzip mount): every model's
// files under the model's name, so a model "org/name" is the directory
// org/name. Models whose names cannot be paths are skipped with a log
// line. The tree follows the index (fresh, through Source.Refresh):
// models added later appear, removed ones leave.
func (s *Server) openStoreAll(loc string) (*storeSrc, error) {
	src, err := s.openStore(loc)
	if err != nil {
		return nil, err
	}
	src.list = src.readAll
	stamp, _ := src.statIndex()
	v, err := src.store().IndexVersion()
	if err == nil {
		err = src.readAll(true)
	}
	if err != nil {
		src.close()
		return nil, err
	}
	src.version, src.stamp, src.checked = v, stamp, time.Now()
	return src, nil
}

// readAll reads the store's listing as one tree (src.all), reusing the
// files of models whose manifests did not change (one read of the index:
// store.List). At open (first) a model that cannot be listed and two
// models giving the same path are errors; later the model is logged and
// left out, and of two models giving the same path the one shown before
// keeps it (a new one that clashes is tried again at the next change).
func (src *storeSrc) readAll(first bool) error {
	loc := src.loc
	src.mu.Lock()
	old, oldAll := src.models, src.all
	src.mu.Unlock()
	listed, err := src.store().List(func(m *store.Manifest) bool {
		o := old[m.Name]
		return o == nil || !sameManifest(o.m, m)
	})
	if err != nil {
		return fmt.Errorf("serve: %s: %w", loc, err)
	}
	models := make(map[string]*storeModel, len(listed))
	var kept, fresh []*storeModel
	for _, l := range listed {
		sm := old[l.Name]
		if l.Lens != nil || l.Err != nil {
			if sm, err = src.treeModel(l); err != nil {
				if first {
					return err
				}
				src.srv.logf("%v (not shown)", err)
				continue
			}
			fresh = append(fresh, sm)
		} else {
			kept = append(kept, sm)
		}
		models[l.Name] = sm
	}
	var files []*file
	if first {
		for _, sm := range fresh {
			files = append(files, sm.files...)
		}
		if name := clash(files); name != "" {
			return fmt.Errorf("serve: %s: two models give the path %q", loc, name)
		}
	} else {
		taken := newPathSet()
		for _, sm := range kept { // shown together before: no clash
			taken.add(sm.files)
			files = append(files, sm.files...)
		}
		for _, sm := range fresh {
			if !taken.fits(sm.files) {
				src.srv.logf("serve: %s: model %q gives a path another model's files take: not shown", loc, sm.m.Name)
				delete(models, sm.m.Name) // listed again at the next change
				continue
			}
			taken.add(sm.files)
			files = append(files, sm.files...)
		}
		sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	}
	changed := first || !slices.Equal(files, oldAll)
	src.mu.Lock()
	src.models = models
	if changed {
		src.all, src.allMod = files, src.modified()
		src.allGen++
	}
	src.mu.Unlock()
	if changed && !first {
		var added, replaced, gone []string
		for name, sm := range models {
			switch o := old[name]; {
			case sm.files == nil || o == sm:
			case o == nil || o.files == nil:
				added = append(added, name)
			default:
				replaced = append(replaced, name)
			}
		}
		for name, o := range old {
			if models[name] == nil && o.files != nil {
				gone = append(gone, name)
			}
		}
		slices.Sort(added)
		slices.Sort(replaced)
		slices.Sort(gone)
		src.srv.logf("serve: %s changed: %d files; models added %v, changed %v, removed %v", loc, len(files), added, replaced, gone)
	}
	return nil
}

// treeModel lists a model's files under its name (files nil: a name that
// cannot be a path, logged). A model of one file named by its path is that
// file (nzip store add's naming); others are a directory of their files.
func (src *storeSrc) treeModel(l store.Listed) (*storeModel, error) {
	name := l.Name
	if !validName(name) {
		src.srv.logf("serve: %s: skipping model %q: a name that cannot be a path", src.loc, name)
		return &storeModel{m: l.Manifest}, nil
	}
	dir := name
	if len(l.Files) == 1 && (l.Files[0].Name == name || strings.HasSuffix(name, "/"+l.Files[0].Name)) {
		dir = parentDir(name)
	}
	fs, err := src.modelFiles(l, dir)
	if err != nil {
		return nil, err
	}
	return &storeModel{m: l.Manifest, files: fs}, nil
}

// pathSet is the paths a tree's files take: their names and directories.
type pathSet struct{ files, dirs map[string]bool }

func newPathSet() pathSet { return pathSet{map[string]bool{}, map[string]bool{}} }

func (p pathSet) add(fs []*file) {
	for _, f := range fs {
		p.files[f.name] = true
		for d := parentDir(f.name); d != ""; d = parentDir(d) {
			p.dirs[d] = true
		}
	}
}

// fits reports whether fs can join the tree: no name another file or a
// directory holds, no directory another file's name (nor among fs).
func (p pathSet) fits(fs []*file) bool {
	own := newPathSet()
	for _, f := range fs {
		for _, set := range []pathSet{p, own} {
			if set.files[f.name] || set.dirs[f.name] {
				return false
			}
			for d := parentDir(f.name); d != ""; d = parentDir(d) {
				if set.files[d] {
					return false
				}
			}
		}
		own.add([]*file{f})
	}
	return true
}
