//go:build !nodev

package main

import (
	"github.com/spf13/cobra"

	"github.com/commerce-integration/commerce/internal/app/dev"
)

// devCommand is `commerce dev`, with the embedded Temporal server.
func devCommand() *cobra.Command { return dev.Command() }
