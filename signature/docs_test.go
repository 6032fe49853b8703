package signature

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// webhooksDoc is the receivers' page, whose example and verifiers these
// tests check.
const webhooksDoc = "../docs/webhooks.md"

// codeBlock returns the first fenced block of lang in doc that contains
// marker.
func codeBlock(t *testing.T, doc, lang, marker string) string {
	t.Helper()
	for _, part := range strings.Split(doc, "```"+lang+"\n")[1:] {
		block, _, _ := strings.Cut(part, "```")
		if strings.Contains(block, marker) {
			return block
		}
	}
	t.Fatalf("%s has no %s block with %q", webhooksDoc, lang, marker)
	return ""
}

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(webhooksDoc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The example delivery on the page is real: signed by both schemes with
// the example secret it names, a moment after the event's created_at.
func TestDocsExampleDeliveryVerifies(t *testing.T) {
	doc := readDoc(t)
	example := codeBlock(t, doc, "", "POST /hooks/commerce")
	header := map[string]string{}
	var body []byte
	for line := range strings.SplitSeq(example, "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, "{") {
			header[strings.ToLower(k)] = v
		}
		if strings.HasPrefix(line, "{") {
			body = []byte(line)
		}
	}
	secret := regexp.MustCompile("signed with the secret\\s+`(whsec_[^`]+)`").FindStringSubmatch(doc)
	if secret == nil || body == nil {
		t.Fatalf("no example secret or body in %s", webhooksDoc)
	}
	ts, err := strconv.ParseInt(header["webhook-timestamp"], 10, 64)
	if err != nil {
		t.Fatalf("webhook-timestamp %q", header["webhook-timestamp"])
	}
	at := time.Unix(ts, 0)
	if err := Verify(header["x-service-signature"], secret[1], body, at, DefaultTolerance); err != nil {
		t.Errorf("X-Service-Signature: %v", err)
	}
	get := func(name string) string { return header[strings.ToLower(name)] }
	signed, err := VerifyRequest(get, secret[1], body, at, DefaultTolerance)
	if err != nil || len(signed.Values) != 2 {
		t.Errorf("the example verifies by %d schemes, %v; want both", len(signed.Values), err)
	}
	created := regexp.MustCompile(`"created_at":"([^"]+)"`).FindSubmatch(body)
	if created == nil {
		t.Fatal("the example body has no created_at")
	}
	c, err := time.Parse(time.RFC3339Nano, string(created[1]))
	if d := at.Sub(c); err != nil || d < 0 || d > 5*time.Second {
		t.Errorf("the example is signed %v after its created_at (%v)", d, err)
	}
	if id := header["webhook-id"]; id != header["x-service-event-id"] || !bytes.Contains(body, []byte(`{"id":"`+id+`"`)) {
		t.Errorf("webhook-id %s is not the event id", id)
	}
}

// verifierCase is a delivery a hand-written verifier on the page is given,
// and whether it must say valid.
type verifierCase struct {
	name   string
	header string
	body   []byte
	valid  bool
}

func verifierCases(secret string, body []byte) []verifierCase {
	now := time.Now()
	good := Sign(secret, now, body)
	v1 := Compute(secret, now.Unix(), body)
	return []verifierCase{
		{"valid", good, body, true},
		{"upper-case hex", fmt.Sprintf("t=%d,v1=%s", now.Unix(), strings.ToUpper(v1)), body, true},
		{"during a rotation", fmt.Sprintf("t=%d,v1=%s,v1=%s", now.Unix(), Compute("whsec_old", now.Unix(), body), v1), body, true},
		{"non-ASCII v1", fmt.Sprintf("t=%d,v1=é%s", now.Unix(), v1[2:]), body, false},
		{"non-ASCII t", "t=²,v1=" + v1, body, false},
		{"610 seconds old", Sign(secret, now.Add(-610*time.Second), body), body, false},
		{"tampered body", good, append([]byte("x"), body...), false},
		{"another secret", Sign("whsec_other", now, body), body, false},
		{"no header", "", body, false},
	}
}

// The Python, Node.js and shell verifiers on the page answer each case
// right (each is run when its interpreter is installed). Python and
// Node.js read every case from cases.json and print one answer a line.
func TestDocsVerifiersAnswerRightly(t *testing.T) {
	doc := readDoc(t)
	secret := "whsec_CVdVAdwkWOjSjVP/TFEXH2qW+KFdY554ZX9ViP/oyCQ="
	cases := verifierCases(secret, []byte(`{"id":"evt_1","data":{"company":"Zoë & Co"}}`))
	dir := t.TempDir()
	write := func(name string, content []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	type jsonCase struct {
		Header string `json:"header"`
		Body   []byte `json:"body"` // base64
	}
	var all []jsonCase
	for _, c := range cases {
		all = append(all, jsonCase{c.header, c.body})
	}
	casesJSON, _ := json.Marshal(all)
	casesFile := write("cases.json", casesJSON)
	python := write("verify.py", []byte(codeBlock(t, doc, "python", "def verify(header")+`
import base64, json, sys
for c in json.load(open(sys.argv[1])):
    print(verify(c["header"], sys.argv[2], base64.b64decode(c["body"])))
`))
	node := write("verify.js", []byte(codeBlock(t, doc, "js", "function verify(header")+`
for (const c of JSON.parse(require("node:fs").readFileSync(process.argv[2]))) {
  console.log(verify(c.header, process.argv[3], Buffer.from(c.body, "base64")));
}
`))
	shell := write("verify.sh", []byte(codeBlock(t, doc, "sh", "verify() (")))

	// lines runs a verifier that answers every case at once.
	lines := func(t *testing.T, bin, script, yes string) {
		out, err := exec.Command(bin, script, casesFile, secret).CombinedOutput()
		got := strings.Split(strings.TrimSpace(string(out)), "\n")
		if err != nil || len(got) != len(cases) {
			t.Fatalf("%s: %v\n%s", bin, err, out)
		}
		for i, c := range cases {
			if (got[i] == yes) != c.valid || !strings.EqualFold(got[i], "true") && !strings.EqualFold(got[i], "false") {
				t.Errorf("%s: said %q; want valid %v", c.name, got[i], c.valid)
			}
		}
	}
	// perCase runs the shell verifier on one case after another: it prints
	// valid and succeeds, or prints INVALID and a reason and fails.
	perCase := func(t *testing.T, bin string) {
		for _, c := range cases {
			write("body.json", c.body)
			cmd := exec.Command(bin, shell)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "SIG="+c.header, "WEBHOOK_SECRET="+secret)
			b, err := cmd.CombinedOutput()
			out := strings.TrimSpace(string(b))
			if valid := out == "valid" && err == nil; valid != c.valid || !valid && (!strings.HasPrefix(out, "INVALID") || err == nil) {
				t.Errorf("%s: said %q (%v); want valid %v", c.name, out, err, c.valid)
			}
		}
	}
	for _, v := range []struct {
		name, bin string
		needs     []string
		check     func(t *testing.T)
	}{
		{"Python", "python3", nil, func(t *testing.T) { lines(t, "python3", python, "True") }},
		{"Node.js", "node", nil, func(t *testing.T) { lines(t, "node", node, "true") }},
		{"shell (sh)", "sh", []string{"openssl"}, func(t *testing.T) { perCase(t, "sh") }},
		{"shell (bash)", "bash", []string{"openssl"}, func(t *testing.T) { perCase(t, "bash") }},
	} {
		t.Run(v.name, func(t *testing.T) {
			for _, bin := range append([]string{v.bin}, v.needs...) {
				if _, err := exec.LookPath(bin); err != nil {
					t.Skipf("%s is not installed: the %s verifier on the page is not run", bin, v.name)
				}
			}
			v.check(t)
		})
	}
}
