package db

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// RecordName is what a person reads for a record an audit entry names:
// Name (a receipt's action and first reference, "erp_order_status post
// SO-2026-0204"; an endpoint's or a key's name; a user's email; a delivery's event type;
// when a bulk replay started) and, for a subscription or a delivery, the
// receiver's URL, which the reader shows without its path and query.
type RecordName struct {
	Name string
	URL  string
}

// AuditNames names the records and the API-key actors of entries, keyed
// by "<target type>:<id>" ("key:<id>" for a key): the audit log shows them
// instead of their ids. A record that is gone, or of another organisation,
// has no name.
func (d *DB) AuditNames(ctx context.Context, orgID uuid.UUID, entries []AuditEntry) (map[string]RecordName, error) {
	ids := map[string][]uuid.UUID{}
	add := func(kind, raw string) {
		if id, err := uuid.Parse(raw); err == nil {
			ids[kind] = append(ids[kind], id)
		}
	}
	for _, e := range entries {
		add(e.TargetType, e.TargetID)
		if len(e.Actor) > len("key:") && e.Actor[:len("key:")] == "key:" {
			add("key", e.Actor[len("key:"):])
		}
	}
	names := map[string]RecordName{}
	if len(ids) == 0 {
		return names, nil
	}
	rows, err := d.pool.Query(ctx, `
		SELECT 'receipt', r.id, r.action || ' post' || coalesce(' ' || r.refs[1], ''), ''
		  FROM inbound_receipts r WHERE r.org_id = $1 AND r.id = ANY($2)
		UNION ALL
		SELECT 'endpoint', e.id, e.name, '' FROM inbound_endpoints e WHERE e.org_id = $1 AND e.id = ANY($3)
		UNION ALL
		SELECT 'subscription', s.id, '', s.url FROM webhook_subscriptions s WHERE s.org_id = $1 AND s.id = ANY($4)
		UNION ALL
		SELECT 'delivery', w.id, ev.type, s.url
		  FROM webhook_deliveries w
		  JOIN events ev ON ev.org_id = w.org_id AND ev.id = w.event_id
		  JOIN webhook_subscriptions s ON s.org_id = w.org_id AND s.id = w.subscription_id
		 WHERE w.org_id = $1 AND w.id = ANY($5)
		UNION ALL
		SELECT 'replay_batch', b.id, 'bulk replay' || CASE WHEN b.dry_run THEN ' (dry run)' ELSE '' END ||
		       ' started ' || to_char(b.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI "UTC"'), ''
		  FROM replay_batches b WHERE b.org_id = $1 AND b.id = ANY($6)
		UNION ALL
		SELECT 'key', k.id, k.name, '' FROM api_keys k WHERE k.org_id = $1 AND k.id = ANY($7)
		UNION ALL
		SELECT 'user', u.id, u.email, '' FROM users u WHERE u.org_id = $1 AND u.id = ANY($8)`,
		orgID, ids["receipt"], ids["endpoint"], ids["subscription"], ids["delivery"], ids["replay_batch"], ids["key"], ids["user"])
	if err != nil {
		return nil, fmt.Errorf("audit names: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind string
		var id uuid.UUID
		var n RecordName
		if err := rows.Scan(&kind, &id, &n.Name, &n.URL); err != nil {
			return nil, err
		}
		names[kind+":"+id.String()] = n
	}
	return names, rows.Err()
}
