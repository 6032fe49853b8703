package domain

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"time"
)

// TimestampLayout is the wire format of every timestamp: RFC 3339 in UTC
// with milliseconds.
const TimestampLayout = "2006-01-02T15:04:05.000Z07:00"

// DateLayout is the wire format of date-only fields.
const DateLayout = "2006-01-02"

// Timestamp is an instant that travels as RFC 3339 UTC with milliseconds
// ("2026-11-22T10:15:30.123Z") and scans from and writes to timestamptz.
type Timestamp struct{ time.Time }

// NewTimestamp wraps t.
func NewTimestamp(t time.Time) Timestamp { return Timestamp{t} }

// String formats the timestamp for the wire.
func (t Timestamp) String() string { return t.UTC().Format(TimestampLayout) }

// MarshalJSON implements json.Marshaler.
func (t Timestamp) MarshalJSON() ([]byte, error) { return json.Marshal(t.String()) }

// UnmarshalJSON accepts any RFC 3339 timestamp.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("timestamp %q is not RFC 3339", s)
	}
	t.Time = v
	return nil
}

// Scan implements sql.Scanner.
func (t *Timestamp) Scan(src any) error {
	v, ok := src.(time.Time)
	if !ok {
		return fmt.Errorf("cannot scan %T into Timestamp", src)
	}
	t.Time = v
	return nil
}

// Value implements driver.Valuer.
func (t Timestamp) Value() (driver.Value, error) { return t.Time, nil }

// Date is a calendar date that travels as "YYYY-MM-DD" and maps to date.
type Date struct{ time.Time }

// ParseDate reads a "YYYY-MM-DD" date; anything else is EINVALID.
func ParseDate(s string) (Date, error) {
	v, err := time.Parse(DateLayout, s)
	if err != nil {
		return Date{}, Errorf(EINVALID, "date %s is not YYYY-MM-DD", quoted(s))
	}
	return Date{v}, nil
}

// String formats the date for the wire.
func (d Date) String() string { return d.Format(DateLayout) }

// MarshalJSON implements json.Marshaler.
func (d Date) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON accepts "YYYY-MM-DD".
func (d *Date) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := ParseDate(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Scan implements sql.Scanner.
func (d *Date) Scan(src any) error {
	v, ok := src.(time.Time)
	if !ok {
		return fmt.Errorf("cannot scan %T into Date", src)
	}
	d.Time = time.Date(v.Year(), v.Month(), v.Day(), 0, 0, 0, 0, time.UTC)
	return nil
}

// Value implements driver.Valuer.
func (d Date) Value() (driver.Value, error) { return d.Time, nil }

// QuoteExpiresAt is when a quote valid until d expires: the end of that day,
// UTC. A quote is valid through its valid_until date.
func QuoteExpiresAt(d Date) time.Time {
	return time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1)
}
