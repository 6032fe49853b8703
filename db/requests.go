package db

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// requestRecords reads a request thread's row for the request list and a
// request's detail.
var requestRecords = records[domain.RequestThread]{
	table: "request_threads", alias: "r",
	columns: `r.id, r.title, r.status, r.last_message_at, r.created_at`,
	fields: func(t *domain.RequestThread) []any {
		return []any{&t.ID, &t.Title, &t.Status, &t.LastMessageAt, &t.CreatedAt}
	},
}

// ListRequests lists the organisation's request threads, newest first.
func (d *DB) ListRequests(ctx context.Context, orgID uuid.UUID, p Page) ([]domain.RequestThread, error) {
	c := newConds()
	c.add("r.org_id = ?", orgID)
	return requestRecords.list(ctx, d.pool, c, p)
}

// Request returns one of the organisation's request threads with its
// messages, oldest first, at most domain.MessagesPerRequest.
func (d *DB) Request(ctx context.Context, orgID, id uuid.UUID) (domain.RequestDetail, error) {
	var t domain.RequestDetail
	err := d.detail(ctx, "request", requestRecords.into(&t.RequestThread),
		[]string{
			requestRecords.byID(""),
			`SELECT id, role, blocks, created_at FROM request_messages
			 WHERE org_id = $1 AND thread_id = $2 ORDER BY created_at, id LIMIT ` + strconv.Itoa(domain.MessagesPerRequest),
		}, []any{orgID, id},
		collect(&t.Messages, func(r pgx.Row) (domain.RequestMessage, error) {
			var m domain.RequestMessage
			err := r.Scan(&m.ID, &m.Role, &m.Blocks, &m.CreatedAt)
			return m, err
		}))
	return t, err
}

// CreatedRequest is a request thread just opened.
type CreatedRequest struct {
	ID    uuid.UUID `json:"id"`
	Title string    `json:"title"`
}

// CreateRequest opens a request thread attributed to the organisation's
// owner (EUNPROCESSABLE when it has none), with the text as its first
// message in the block protocol, and emits request.created. It draws no
// usage.
func (d *DB) CreateRequest(ctx context.Context, orgID uuid.UUID, r domain.NewRequest) (CreatedRequest, error) {
	var out CreatedRequest
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = createRequest(ctx, tx, orgID, r, nil, nil)
		return err
	})
	return out, err
}

// createRequest opens a request thread within tx (see CreateRequest), for a
// customer and under an external reference when given.
func createRequest(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, r domain.NewRequest, customer *uuid.UUID, externalRef *string) (CreatedRequest, error) {
	out := CreatedRequest{ID: NewID(), Title: r.Title}
	var owner uuid.UUID
	err := tx.QueryRow(ctx, `SELECT id FROM users WHERE org_id = $1 AND role = 'owner'`, orgID).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, domain.Errorf(domain.EUNPROCESSABLE, "the organisation has no owner to attribute the request to")
	}
	if err != nil {
		return out, err
	}
	if _, err := tx.Exec(ctx, `
			INSERT INTO request_threads (id, org_id, title, created_by, customer_id, external_ref, last_message_at)
			VALUES ($1, $2, $3, $4, $5, $6, now())`,
		out.ID, orgID, r.Title, owner, customer, externalRef); err != nil {
		return out, err
	}
	blocks := []map[string]any{{"type": "text", "text": r.Text}}
	if _, err := tx.Exec(ctx, `
			INSERT INTO request_messages (id, org_id, thread_id, role, blocks) VALUES ($1, $2, $3, 'user', $4)`,
		NewID(), orgID, out.ID, blocks); err != nil {
		return out, err
	}
	return out, emit(ctx, tx, orgID, domain.RequestCreated.New(domain.RequestCreatedData{ID: out.ID, Title: r.Title}))
}

// CreateRequest carries out a create_request post (domain.ActionApplier).
func (a *actor) CreateRequest(b domain.CreateRequestBody) (domain.InboundResult, error) {
	if b.ExternalRef != nil {
		spelt, err := a.spelling("request", b.ExternalRef, requestSpellings)
		if err != nil {
			return domain.InboundResult{}, err
		}
		b.ExternalRef = spelt
		var id uuid.UUID
		var title string
		err = a.tx.QueryRow(a.ctx, `SELECT id, title FROM request_threads WHERE org_id = $1 AND external_ref = $2`,
			a.org, *b.ExternalRef).Scan(&id, &title)
		if err == nil {
			res := applied(nil, domain.CreateRequestAnswer{Request: a.requestRef(id, title)})
			res.Status = 202
			return res, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return domain.InboundResult{}, err
		}
	}
	var changes []domain.Change
	var customer *uuid.UUID
	if b.Customer != nil && (b.Customer.Company != "" || b.Customer.Email != nil) {
		entry := domain.CustomerInput{Company: b.Customer.Company, Email: b.Customer.Email}
		if entry.Email != nil {
			e := strings.ToLower(strings.TrimSpace(*entry.Email))
			entry.Email = &e
		}
		id, found, err := matchCustomer(a.ctx, a.tx, a.org, entry)
		if err == nil && !found && entry.Email != nil {
			// A free-mail address matches no domain; the same address on a
			// contact is still the same customer.
			id, found, err = matchCustomerByContactEmail(a.ctx, a.tx, a.org, *entry.Email)
		}
		if err != nil {
			return domain.InboundResult{}, err
		}
		if !found {
			if strings.TrimSpace(entry.Company) == "" {
				// Named after its business domain, or else its address.
				entry.Company = entry.MatchDomain()
				if entry.Company == "" {
					entry.Company = *entry.Email
				}
			}
			if err := entry.Normalize(); err != nil {
				return domain.InboundResult{}, err
			}
			if _, err := upsertCustomers(a.ctx, a.tx, a.org, []domain.CustomerInput{entry}); err != nil {
				return domain.InboundResult{}, err
			}
			if id, found, err = matchCustomerByCompany(a.ctx, a.tx, a.org, entry.Company); err != nil {
				return domain.InboundResult{}, err
			}
			changes = append(changes, domain.Change{Entity: "customer", ID: id.String(), Ref: entry.Company, Field: "created", To: true})
		}
		if found {
			customer = &id
		}
	}
	created, err := createRequest(a.ctx, a.tx, a.org, domain.NewRequest{Text: b.Text, Title: b.Title}, customer, b.ExternalRef)
	if err != nil {
		return domain.InboundResult{}, err
	}
	changes = append(changes, domain.Change{Entity: "request", ID: created.ID.String(), Ref: created.Title, Field: "status", To: domain.RequestActive})
	res := applied(changes, domain.CreateRequestAnswer{Request: a.requestRef(created.ID, created.Title)})
	res.Status = 202
	return res, nil
}

func (a *actor) requestRef(id uuid.UUID, title string) domain.RequestOpened {
	return domain.RequestOpened{ID: id, Title: title, URL: a.baseURL + "/ai/requests/" + id.String()}
}
