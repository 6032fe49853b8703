package domain

import (
	"strings"
	"testing"
)

func TestCheckVerificationNormalisesWhatItKeeps(t *testing.T) {
	got, err := CheckVerification(VerifyHMAC, VerificationConfig{HMAC: &HMACConfig{Header: " x-hub-signature-256 ", Algorithm: "SHA256",
		Encoding: "Hex", Prefix: "sha256="}})
	if err != nil || *got.HMAC != (HMACConfig{Header: "X-Hub-Signature-256", Algorithm: "sha256", Encoding: "hex", Prefix: "sha256="}) {
		t.Fatalf("github's scheme = %+v, %v", got.HMAC, err)
	}
	got, err = CheckVerification(VerifyHMAC, VerificationConfig{HMAC: &HMACConfig{Header: "X-Signature", Algorithm: "sha512",
		Encoding: "base64", TimestampHeader: "x-signature-timestamp"}})
	if err != nil || got.HMAC.TimestampHeader != "X-Signature-Timestamp" || got.HMAC.ToleranceSeconds != DefaultHMACTolerance {
		t.Fatalf("a signed timestamp = %+v, %v; want the canonical header and the default tolerance", got.HMAC, err)
	}
	got, err = CheckVerification(VerifyBasic, VerificationConfig{Username: "erp"})
	if err != nil || got.Username != "erp" || got.HMAC != nil {
		t.Fatalf("basic = %+v, %v", got, err)
	}
	for _, k := range []Verification{VerifyService, VerifyNone} {
		if got, err := CheckVerification(k, VerificationConfig{}); err != nil || got != (VerificationConfig{}) {
			t.Fatalf("%s = %+v, %v", k, got, err)
		}
	}
}

func TestCheckVerificationNamesTheFieldThatIsWrong(t *testing.T) {
	good := func() *HMACConfig { return &HMACConfig{Header: "X-Sig", Algorithm: "sha256", Encoding: "hex"} }
	with := func(change func(*HMACConfig)) VerificationConfig {
		c := good()
		change(c)
		return VerificationConfig{HMAC: c}
	}
	cases := []struct {
		kind Verification
		cfg  VerificationConfig
		want string
	}{
		{"ldap", VerificationConfig{}, "kind"},
		{VerifyHMAC, VerificationConfig{}, "hmac is required"},
		{VerifyNone, VerificationConfig{HMAC: good()}, "hmac is only for kind hmac"},
		{VerifyService, VerificationConfig{Username: "erp"}, "username is only for kind basic"},
		{VerifyBasic, VerificationConfig{}, "username is required"},
		{VerifyBasic, VerificationConfig{Username: "a:b"}, "username"},
		{VerifyBasic, VerificationConfig{Username: strings.Repeat("u", 201)}, "username"},
		{VerifyHMAC, with(func(c *HMACConfig) { c.Header = "" }), "hmac.header"},
		{VerifyHMAC, with(func(c *HMACConfig) { c.Header = "X Sig" }), "hmac.header"},
		{VerifyHMAC, with(func(c *HMACConfig) { c.Header = "authorization" }), "hmac.header may not be Authorization"},
		{VerifyHMAC, with(func(c *HMACConfig) { c.Header = "x-service-signature" }), "hmac.header may not be X-Service-Signature"},
		{VerifyHMAC, with(func(c *HMACConfig) { c.Algorithm = "md5" }), "hmac.algorithm"},
		{VerifyHMAC, with(func(c *HMACConfig) { c.Encoding = "base32" }), "hmac.encoding"},
		{VerifyHMAC, with(func(c *HMACConfig) { c.Prefix = "sha256=\n" }), "hmac.prefix"},
		{VerifyHMAC, with(func(c *HMACConfig) { c.ToleranceSeconds = 60 }), "hmac.tolerance_seconds needs hmac.timestamp_header"},
		{VerifyHMAC, with(func(c *HMACConfig) { c.TimestampHeader = "X-Sig" }), "hmac.timestamp_header must not be hmac.header"},
		{VerifyHMAC, with(func(c *HMACConfig) { c.TimestampHeader = "X-Ts"; c.ToleranceSeconds = -1 }), "hmac.tolerance_seconds"},
		{VerifyHMAC, with(func(c *HMACConfig) { c.TimestampHeader = "X-Ts"; c.ToleranceSeconds = MaxHMACTolerance + 1 }), "hmac.tolerance_seconds"},
		{VerifyHMAC, with(func(c *HMACConfig) { c.TimestampHeader = "Idempotency-Key" }), "hmac.timestamp_header may not be"},
	}
	for _, c := range cases {
		_, err := CheckVerification(c.kind, c.cfg)
		if ErrorCode(err) != EINVALID || !strings.Contains(ErrorMessage(err), c.want) {
			t.Errorf("%s %+v: %v; want EINVALID naming %q", c.kind, c.cfg, err, c.want)
		}
	}
}
