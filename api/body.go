package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
)

type bodyKey struct{}

// tooLarge is the message of a body over its route's limit.
func tooLarge(limit int64) string {
	return fmt.Sprintf("the body is larger than the route's limit of %d bytes", limit)
}

// requestBody is the body of an operation registered by registerRawJSON,
// read as it arrives.
func requestBody(ctx context.Context) *streamedBody {
	if b, ok := ctx.Value(bodyKey{}).(*streamedBody); ok {
		return b
	}
	return &streamedBody{r: http.NoBody}
}

// streamedBody reads a request body up to its route's limit and keeps what
// went wrong reading it. That decides the answer, whatever the decoder made
// of the input cut short: over the limit 413, too slow 408.
type streamedBody struct {
	r     io.Reader
	limit int64 // bytes allowed
	read  int64
	err   error
}

func (b *streamedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	// Read at most one byte past the limit: that byte is the proof of a
	// body over it.
	if room := b.limit - b.read + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	var ne net.Error
	switch {
	case b.read > b.limit:
		b.err = huma.Error413RequestEntityTooLarge(tooLarge(b.limit))
	case err == nil || err == io.EOF:
		return n, err
	case errors.As(err, &ne) && ne.Timeout():
		b.err = huma.NewError(http.StatusRequestTimeout, "the body did not arrive within its read time")
	default:
		b.err = huma.Error400BadRequest("the body could not be read")
	}
	return n, b.err
}

// Settle is why the body could not be read whole, or nil, given what
// decoding it answered. A decoder that stopped early (a row past the limit,
// a syntax error) leaves the rest unread; the rest is read and dropped, so
// that a body over the limit answers 413 whatever the bytes inside it, as
// the route's description says.
func (b *streamedBody) Settle(decodeErr error) error {
	if decodeErr != nil && b.err == nil {
		_, _ = io.Copy(io.Discard, b)
	}
	return b.err
}
