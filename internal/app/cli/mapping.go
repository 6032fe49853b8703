package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/config"
)

// endpointMappingCmd is `endpoint mapping`: the JavaScript that reshapes an
// endpoint's posts (docs/mappings.md), as the API's mapping routes manage
// it, each write recorded in the audit log.
func endpointMappingCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "mapping", Short: "Set, show, try and remove an endpoint's mapping (docs/mappings.md)"}
	cmd.AddCommand(mappingSetCmd(), mappingShowCmd(), mappingVersionsCmd(), mappingTestCmd(), mappingRemoveCmd())
	return cmd
}

// readSource reads a file's text, or standard input for "-".
func readSource(cmd *cobra.Command, path string) (string, error) {
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 1<<20))
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return string(raw), nil
}

// mappingCmd is a mapping command on one endpoint: run gets the service.
func mappingCmd[T any](use, short string, run func(cmd *cobra.Command, m *integrations.Service, ctx context.Context, orgID, id uuid.UUID) (T, error),
	table func(io.Writer, T)) *cobra.Command {
	cfg := config.Load()
	var cmd *cobra.Command
	cmd = orgRecordCmd(use, short, (*db.DB).EndpointOrg, func(d *db.DB, ctx context.Context, orgID, id uuid.UUID) (T, error) {
		m, err := operatorService(cfg, d, nil, nil)
		if err != nil {
			var zero T
			return zero, err
		}
		return run(cmd, m, ctx, orgID, id)
	}, table)
	return cmd
}

func printVersion(w io.Writer, v api.MappingVersion) {
	sum := "(none: mapping ended)"
	if v.SHA256 != nil {
		sum = *v.SHA256
	}
	fmt.Fprintf(w, "version\t%d\nsha256\t%s\ncreated\t%s by %s\n", v.Version, sum, v.CreatedAt, v.CreatedBy)
}

func mappingSetCmd() *cobra.Command {
	var file string
	cmd := mappingCmd("set ENDPOINT_ID", "Make a file's JavaScript the endpoint's mapping, as its next version",
		func(cmd *cobra.Command, m *integrations.Service, ctx context.Context, orgID, id uuid.UUID) (api.MappingVersion, error) {
			src, err := readSource(cmd, file)
			if err != nil {
				return api.MappingVersion{}, err
			}
			v, err := m.SetEndpointMapping(ctx, operator(), orgID, id, src)
			return api.NewMappingVersion(v), err
		}, printVersion)
	cmd.Flags().StringVar(&file, "file", "", "the JavaScript, defining function map(post) (- for standard input; required)")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func mappingShowCmd() *cobra.Command {
	return mappingCmd("show ENDPOINT_ID", "Print the endpoint's current mapping with its source",
		func(_ *cobra.Command, m *integrations.Service, ctx context.Context, orgID, id uuid.UUID) (api.MappingDetail, error) {
			v, err := m.EndpointMapping(ctx, orgID, id)
			return api.NewMappingDetail(v), err
		}, func(w io.Writer, v api.MappingDetail) {
			printVersion(w, v.MappingVersion)
			if v.Source != nil {
				fmt.Fprintf(w, "\n%s\n", *v.Source)
			}
		})
}

func mappingVersionsCmd() *cobra.Command {
	return mappingCmd("versions ENDPOINT_ID", "List the endpoint's mapping versions, newest first",
		func(_ *cobra.Command, m *integrations.Service, ctx context.Context, orgID, id uuid.UUID) ([]api.MappingVersion, error) {
			vs, err := m.EndpointMappingVersions(ctx, orgID, id)
			return api.Answers(vs, api.NewMappingVersion), err
		}, func(w io.Writer, vs []api.MappingVersion) {
			fmt.Fprintln(w, "VERSION\tSHA256\tCREATED\tBY")
			for _, v := range vs {
				sum := "(ended)"
				if v.SHA256 != nil {
					sum = (*v.SHA256)[:12]
				}
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", v.Version, sum, v.CreatedAt, v.CreatedBy)
			}
		})
}

func mappingRemoveCmd() *cobra.Command {
	return mappingCmd("remove ENDPOINT_ID", "End the endpoint's mapping: its posts are taken as sent again",
		func(_ *cobra.Command, m *integrations.Service, ctx context.Context, orgID, id uuid.UUID) (api.MappingVersion, error) {
			v, err := m.EndEndpointMapping(ctx, operator(), orgID, id)
			return api.NewMappingVersion(v), err
		}, printVersion)
}

func mappingTestCmd() *cobra.Command {
	var file, body, receipt string
	var dryRun bool
	cmd := mappingCmd("test ENDPOINT_ID",
		"Run a mapping on a body or a stored receipt, and store nothing",
		func(cmd *cobra.Command, m *integrations.Service, ctx context.Context, orgID, id uuid.UUID) (api.MappingTestResult, error) {
			t := integrations.MappingTest{DryRun: dryRun}
			if file != "" {
				src, err := readSource(cmd, file)
				if err != nil {
					return api.MappingTestResult{}, err
				}
				t.Source = &src
			}
			if body != "" {
				raw, err := readSource(cmd, body)
				if err != nil {
					return api.MappingTestResult{}, err
				}
				t.Body = json.RawMessage(raw)
			}
			if receipt != "" {
				rid, err := parseID("--receipt", receipt)
				if err != nil {
					return api.MappingTestResult{}, err
				}
				t.ReceiptID = &rid
			}
			res, err := m.TestEndpointMapping(ctx, orgID, id, t)
			return api.NewMappingTestResult(res), err
		}, func(w io.Writer, r api.MappingTestResult) {
			fmt.Fprintf(w, "result\t%s\nduration\t%.2f ms\n", r.Result, r.DurationMS)
			if r.Error != nil {
				fmt.Fprintf(w, "error\t%s\n", *r.Error)
			}
			if r.MappedBody != nil {
				b, _ := json.Marshal(r.MappedBody)
				fmt.Fprintf(w, "mapped body\t%s\n", b)
			}
			for _, l := range r.Logs {
				fmt.Fprintf(w, "log\t%s\n", l)
			}
			if r.Outcome != nil {
				fmt.Fprintf(w, "would be\t%s\n", *r.Outcome)
			}
			for _, c := range r.Changes {
				fmt.Fprintf(w, "change\t%s %s %s: %v -> %v\n", c.Entity, c.Ref, c.Field, c.From, c.To)
			}
		})
	cmd.Flags().StringVar(&file, "file", "", "the JavaScript to run (default: the endpoint's current mapping; - for standard input)")
	cmd.Flags().StringVar(&body, "body", "", "a file with a body to map, as a sender would post it (- for standard input)")
	cmd.Flags().StringVar(&receipt, "receipt", "", "a receipt of the endpoint whose stored body to map")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "also show the changes the mapped body's action would make")
	return cmd
}
