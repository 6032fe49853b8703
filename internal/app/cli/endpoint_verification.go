package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/secrets"
)

func endpointVerificationCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "verification", Short: "How an endpoint verifies its sender (docs/design.md#sender-verification)"}
	cmd.AddCommand(endpointVerificationSetCmd())
	return cmd
}

// hmacFlags are the flags of a sender's HMAC scheme: only with --kind hmac.
var hmacFlags = []string{"header", "algorithm", "encoding", "prefix", "timestamp-header", "tolerance"}

// flagNames names the flags of the fields a refusal names.
var flagNames = strings.NewReplacer("hmac.header", "--header", "hmac.algorithm", "--algorithm", "hmac.encoding", "--encoding",
	"hmac.prefix", "--prefix", "hmac.timestamp_header", "--timestamp-header", "hmac.tolerance_seconds", "--tolerance")

// endpointVerificationSetCmd is `endpoint verification set`: what PUT
// /api/v1/inbound/endpoints/{id}/verification does, as an operator, with
// the API's answer as its JSON.
func endpointVerificationSetCmd() *cobra.Command {
	var kind, username string
	var scheme domain.HMACConfig
	var cmd *cobra.Command
	set := func(d *db.DB, ctx context.Context, orgID, id uuid.UUID) (api.VerificationSet, error) {
		k := domain.Verification(kind)
		cfg := domain.VerificationConfig{Username: username}
		for _, f := range hmacFlags {
			if cmd.Flags().Changed(f) && k != domain.VerifyHMAC {
				return api.VerificationSet{}, usagef("--%s is only for --kind hmac", f)
			}
		}
		if k == domain.VerifyHMAC {
			cfg.HMAC = &scheme
		}
		// Checked before the service key is needed: a wrong flag is told as such.
		if _, err := domain.CheckVerification(k, cfg); err != nil {
			return api.VerificationSet{}, usagef("%s", flagNames.Replace(domain.ErrorMessage(err)))
		}
		c := config.Load()
		var sealer *secrets.Sealer
		if k.HasSecret() {
			var err error
			if sealer, err = configSealer(c); err != nil {
				return api.VerificationSet{}, err
			}
		}
		m, err := operatorService(c, d, sealer, nil)
		if err != nil {
			return api.VerificationSet{}, err
		}
		v, err := m.SetEndpointVerification(ctx, operator(), orgID, id, db.NewVerification{Kind: k, Config: cfg})
		if err != nil {
			return api.VerificationSet{}, err
		}
		return api.NewVerificationSet(v), nil
	}
	cmd = orgRecordCmd("set ENDPOINT_ID", "Set how an endpoint verifies its sender (a new HMAC secret or Basic password is printed once)",
		(*db.DB).EndpointOrg, set, printVerificationSet)
	cmd.Long = "set sets how posts to the endpoint are verified, in place of what it did (a post that does not pass is 401):\n" +
		"  --kind service  the service's own signature, when the endpoint was made with --require-signature (the default)\n" +
		"  --kind hmac     the sender's own HMAC of the body as sent, keyed with a secret made now and printed once:\n" +
		"                  GitHub:  --header X-Hub-Signature-256 --algorithm sha256 --encoding hex --prefix sha256=\n" +
		"                  Shopify: --header X-Shopify-Hmac-Sha256 --algorithm sha256 --encoding base64\n" +
		"                  with --timestamp-header the signed content is <timestamp>.<body>, and a timestamp more than\n" +
		"                  --tolerance seconds (300) from the clock is refused\n" +
		"  --kind basic    HTTP Basic authentication with --username and a password made now and printed once\n" +
		"  --kind none     nothing is verified but the token in the URL\n" +
		"Each hmac or basic set makes a new secret: the one before stops working at once. Needs COMMERCE_SECRET_KEY for them."
	cmd.Flags().StringVar(&kind, "kind", "", "service, hmac, basic or none (required)")
	cmd.Flags().StringVar(&scheme.Header, "header", "", "hmac: the header carrying the signature")
	cmd.Flags().StringVar(&scheme.Algorithm, "algorithm", "", "hmac: sha256 or sha512")
	cmd.Flags().StringVar(&scheme.Encoding, "encoding", "", "hmac: hex or base64")
	cmd.Flags().StringVar(&scheme.Prefix, "prefix", "", "hmac: text before the encoded HMAC (GitHub's sha256=)")
	cmd.Flags().StringVar(&scheme.TimestampHeader, "timestamp-header", "", "hmac: a header carrying the signed time in unix seconds")
	cmd.Flags().IntVar(&scheme.ToleranceSeconds, "tolerance", 0, "hmac, with --timestamp-header: how far the signed time may be from the clock, in seconds (300)")
	cmd.Flags().StringVar(&username, "username", "", "basic: the username")
	_ = cmd.MarkFlagRequired("kind")
	return cmd
}

// printVerification prints an endpoint's verification, without a secret.
func printVerification(w io.Writer, v api.EndpointVerification) {
	fmt.Fprintf(w, "verification\t%s\n", v.Kind)
	if h := v.HMAC; h != nil {
		fmt.Fprintf(w, "header\t%s\nalgorithm\t%s\nencoding\t%s\n", h.Header, h.Algorithm, h.Encoding)
		if h.Prefix != "" {
			fmt.Fprintf(w, "prefix\t%s\n", h.Prefix)
		}
		if h.TimestampHeader != "" {
			fmt.Fprintf(w, "timestamp header\t%s\ntolerance\t%d s\n", h.TimestampHeader, h.ToleranceSeconds)
		}
	}
	if v.Username != nil {
		fmt.Fprintf(w, "username\t%s\n", *v.Username)
	}
}

func printVerificationSet(w io.Writer, v api.VerificationSet) {
	fmt.Fprintf(w, "endpoint\t%s\n", v.EndpointID)
	printVerification(w, v.EndpointVerification)
	switch {
	case v.Secret != nil:
		fmt.Fprintf(w, "secret\t%s\n\nThe secret is shown once and stored sealed: give it to the sender now.\n", *v.Secret)
	case v.Password != nil:
		fmt.Fprintf(w, "password\t%s\n\nThe password is shown once and stored sealed: give it to the sender now.\n", *v.Password)
	}
}
