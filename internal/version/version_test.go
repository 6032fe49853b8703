package version

import (
	"regexp"
	"runtime"
	"testing"
)

// The version is a semantic version, as the release tags are.
func TestTheVersionIsASemanticVersion(t *testing.T) {
	semver := regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$`)
	got := Get()
	if !semver.MatchString(got.Version) || got.GoVersion != runtime.Version() {
		t.Fatalf("%+v", got)
	}
}
