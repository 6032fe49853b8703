package domain

import (
	"strings"
	"testing"
)

// A tracking address is stored, shown as a link and sent out in webhooks:
// only an absolute http or https URL of at most 2,048 characters is taken.
func TestTrackingURLIsAnAbsoluteWebAddress(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://track.example/DL-1": true, "http://t.example/x?y=1": true,
		"https://t.example/" + strings.Repeat("x", MaxTrackingURL-len("https://t.example/")): true,
		"https://t.example/" + strings.Repeat("x", MaxTrackingURL):                           false,
		"javascript:alert(1)//": false, "data:text/html,<script>": false, "/relative/path": false,
		"ftp://t.example/x": false, "https:opaque": false, "https://": false, "https://t.example/\x00": false,
	} {
		err := CheckTrackingURL(&raw)
		if (err == nil) != ok || (err != nil && ErrorCode(err) != EINVALID) {
			t.Errorf("%.40q: %v, taken should be %v", raw, err, ok)
		}
	}
	if CheckTrackingURL(nil) != nil {
		t.Error("no tracking address is refused")
	}
	for _, action := range []Action{ActionERPOrderStatus, ActionDeliveryStatus} {
		body := `{"order_ref": "SO-1", "status": "shipped", "tracking_url": "javascript:alert(1)//"}`
		if _, err := ParseInbound(action, []byte(body)); ErrorCode(err) != EINVALID || !strings.Contains(ErrorMessage(err), "tracking_url") {
			t.Errorf("%s with a javascript: tracking_url: %v", action, err)
		}
	}
}
