package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	// The forms' time zones (formZone) load on a host without tzdata.
	_ "time/tzdata"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// perPage is how many rows a list page shows.
const perPage = 50

// pageKey is where a newest-first list continues: the (created_at, id) of
// the last row shown, as "RFC3339Nano_uuid" in the "page" query parameter.
func pageKey(r *http.Request) (db.Page, error) {
	p := db.Page{Limit: perPage + 1}
	raw := r.URL.Query().Get("page")
	if raw == "" {
		return p, nil
	}
	at, id, ok := strings.Cut(raw, "_")
	t, terr := time.Parse(time.RFC3339Nano, at)
	u, uerr := uuid.Parse(id)
	if !ok || terr != nil || uerr != nil {
		return p, domain.Errorf(domain.EINVALID, "the page parameter is not one this console made")
	}
	p.After = &db.Key{At: t, ID: u}
	return p, nil
}

// nextPage trims rows fetched with perPage+1 and returns the link to the
// page after, "" when none follows.
func nextPage[T any](r *http.Request, rows []T, key func(T) (domain.Timestamp, uuid.UUID)) ([]T, string) {
	if len(rows) <= perPage {
		return rows, ""
	}
	rows = rows[:perPage]
	at, id := key(rows[perPage-1])
	q := r.URL.Query()
	q.Set("page", at.Time.UTC().Format(time.RFC3339Nano)+"_"+id.String())
	return rows, r.URL.Path + "?" + q.Encode()
}

func pathID(r *http.Request) (uuid.UUID, error) {
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		return id, domain.Errorf(domain.ENOTFOUND, "no such record")
	}
	return id, nil
}

// zoneField is the field (and query parameter) naming the IANA time zone a
// form's times are in: console.js sets it to the viewer's zone, the one
// the page shows times in. Absent, the times are UTC.
const zoneField = "tz"

// formZone reads the zoneField: UTC when absent, otherwise an IANA zone
// (the embedded tzdata has them all, whatever the host has). The server's
// own zone ("Local") is no viewer's.
func formZone(raw string) (*time.Location, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return time.UTC, nil
	}
	if raw != "Local" {
		if loc, err := time.LoadLocation(raw); err == nil {
			return loc, nil
		}
	}
	return nil, domain.Errorf(domain.EINVALID, "The time zone filter %s names no time zone: %s (an IANA name such as Europe/London).",
		strconv.QuoteToASCII(zoneField), strconv.QuoteToASCII(raw))
}

// zoneName is the name a page gives loc (its zoneField value).
func zoneName(loc *time.Location) string {
	if loc == nil {
		return "UTC"
	}
	return loc.String()
}

// formTime reads a datetime-local field as a time in loc (the form's
// zone), or RFC 3339, which keeps its own offset.
func formTime(name, raw string, loc *time.Location) (*time.Time, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, nil
	}
	if loc == nil {
		loc = time.UTC
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, raw, loc); err == nil {
			return &t, nil
		}
	}
	return nil, domain.Errorf(domain.EINVALID, "%s is not a date and time (YYYY-MM-DDTHH:MM, in %s)", name, zoneName(loc))
}

// inZone shows t as the minute it is in its own zone, naming the zone: the
// form's zone for a time read by formTime, the offset for RFC 3339.
func inZone(t time.Time) string {
	name := t.Location().String()
	if name == "" {
		name = "UTC" + t.Format("-07:00")
	}
	return t.Format("2006-01-02 15:04") + " " + name
}

// receiptName names the receipt id, when there is one, as a person knows
// it ("order_invoice post SO-9"), for a link to it; "" when there is none
// or it is not the organisation's.
func (c *console) receiptName(r *http.Request, org uuid.UUID, id *uuid.UUID) string {
	if id == nil {
		return ""
	}
	rec, err := c.DB.GetReceipt(r.Context(), org, *id)
	if err != nil {
		return "receipt " + id.String()
	}
	return postName(rec.Action, rec.Refs)
}
