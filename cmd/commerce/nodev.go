//go:build nodev

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// devCommand stands in for `commerce dev` in a build without it, and says
// so.
func devCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "dev",
		Short:              "Not in this build: run everything locally (build without the nodev tag)",
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("this commerce binary was built without `commerce dev` (build tag nodev); " +
				"build it without the tag, or run `go run ./cmd/commerce dev` in the repository")
		},
	}
}
