//go:build js

package store

import "errors"

var errS3Unsupported = errors.New("store: s3:// stores are not available in the browser build")

func initS3(string, int, InitOptions) error  { return errS3Unsupported }
func openS3(string, Options) (*Store, error) { return nil, errS3Unsupported }
func migrateS3(string, Options) (MigrateStats, error) {
	return MigrateStats{}, errS3Unsupported
}
