package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/config"
)

func schemaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Manage catalogue schemas (the attribute types a bulk import coerces to)",
	}
	cmd.AddCommand(schemaCreateCmd(), schemaListCmd())
	return cmd
}

func schemaCreateCmd() *cobra.Command {
	cfg := config.Load()
	var org, name, fields string
	cmd := &cobra.Command{
		Use:   "create --org ORG --name NAME --fields JSON|@file",
		Short: "Create a catalogue schema",
		Long: "create stores a catalogue schema: a list of attributes, each\n" +
			`  {"key": "length_mm", "type": "string|number|integer|boolean|enum", "options": [...], "required": true}` + "\n" +
			"(options only for enum). A bulk import naming the schema's id coerces product attributes to these types.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			raw := []byte(fields)
			if path, ok := strings.CutPrefix(fields, "@"); ok {
				if raw, err = os.ReadFile(path); err != nil {
					return fmt.Errorf("read fields: %w", err)
				}
			}
			var fs []domain.CatalogueField
			if err := json.Unmarshal(raw, &fs); err != nil {
				return usagef("--fields must be a JSON array of {key, type, options, required}: %v", err)
			}
			create := func(ctx context.Context, d *db.DB) (domain.CatalogueSchema, error) {
				return d.CreateCatalogueSchema(ctx, orgID, domain.CatalogueSchema{Name: name, Fields: fs})
			}
			return printFromDB(cmd, cfg, create, func(w io.Writer, s domain.CatalogueSchema) {
				fmt.Fprintf(w, "schema\t%s\nid\t%s\nattributes\t%d\n", s.Name, s.ID, len(s.Fields))
			})
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "organisation id (required)")
	cmd.Flags().StringVar(&name, "name", "", "schema name (required)")
	cmd.Flags().StringVar(&fields, "fields", "", "the attributes as a JSON array, or @file (required)")
	for _, f := range []string{"org", "name", "fields"} {
		_ = cmd.MarkFlagRequired(f)
	}
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}

func schemaListCmd() *cobra.Command {
	return orgListCmd("List an organisation's catalogue schemas", (*db.DB).ListCatalogueSchemas,
		func(w io.Writer, list []domain.CatalogueSchema) {
			fmt.Fprintln(w, "ID\tNAME\tATTRIBUTES")
			for _, s := range list {
				keys := make([]string, len(s.Fields))
				for i, f := range s.Fields {
					keys[i] = f.Key + ":" + string(f.Type)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", s.ID, s.Name, strings.Join(keys, ", "))
			}
		})
}
