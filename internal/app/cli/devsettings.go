package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/commerce-integration/commerce/internal/config"
)

// DevDir is the directory `commerce dev` keeps its state in by default,
// relative to where it runs.
const DevDir = ".commerce"

// DevSettingsFile is the file in a dev directory that names its database,
// Temporal, key and the rest (written by `commerce dev`).
const DevSettingsFile = "dev.json"

// OwnSettings, as an annotation of a command, keeps the settings of a dev
// directory away from it: the processes (serve, worker, dev) are configured
// by their environment and flags alone.
const OwnSettings = "commerce/own-settings"

// devSettingsFlag adds the global --dev-dir flag, and reads the dev
// directory's settings into the running command's configuration before it
// runs.
func devSettingsFlag(root *cobra.Command) {
	var dir string
	root.PersistentFlags().StringVar(&dir, "dev-dir", "", "use the settings `commerce dev` keeps in this directory's "+DevSettingsFile+
		" (default "+DevDir+" when it has one); environment variables and flags still win")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		explicit := cmd.Flags().Changed("dev-dir")
		if cmd.Annotations[OwnSettings] != "" {
			if explicit {
				return usagef("--dev-dir does not apply to `%s`, which is configured by its environment and flags", cmd.CommandPath())
			}
			return nil
		}
		if !explicit {
			dir = DevDir
		}
		path := filepath.Join(dir, DevSettingsFile)
		s, err := ReadDevSettings(dir)
		if errors.Is(err, os.ErrNotExist) && !explicit {
			return nil
		}
		if err != nil {
			return fmt.Errorf("commerce dev settings: %w", err)
		}
		if config.UseDev(cmd.Flags(), s) {
			fmt.Fprintf(cmd.ErrOrStderr(), "using commerce dev settings from %s\n", path)
		}
		return nil
	}
}

// ReadDevSettings reads the settings of the dev directory dir.
func ReadDevSettings(dir string) (config.DevSettings, error) {
	var s config.DevSettings
	b, err := os.ReadFile(filepath.Join(dir, DevSettingsFile))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", filepath.Join(dir, DevSettingsFile), err)
	}
	return s, nil
}
