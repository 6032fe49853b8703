// Package version says which release this binary is. Version is set at
// build time by the release build (-ldflags "-X
// github.com/commerce-integration/commerce/internal/version.Version=v0.3.0");
// a build from a checkout reads the next release with "-dev". Revision
// is the commit the binary was built from, where Go recorded it.
package version

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// Version is the release: a semantic version tag (CHANGELOG.md).
var Version = "v0.3.0-dev"

// Info is what a binary says of itself.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	GoVersion string `json:"go_version"`
}

var (
	once sync.Once
	info Info
)

// Get is this binary's Info.
func Get() Info {
	once.Do(func() {
		info = Info{Version: Version, GoVersion: runtime.Version()}
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					info.Revision = s.Value
				}
			}
		}
	})
	return info
}
