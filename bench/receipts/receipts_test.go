package main

import (
	"context"
	"io"
	"testing"

	"github.com/commerce-integration/commerce/bench/internal/receipts"
)

// TestReceiptsBenchmarkRunsSmall runs the receipts benchmark at a small
// size: every query answers 200 and finds what it must (the whole
// reference one receipt, its lower case the same, a prefix a full page,
// a receipt id its receipt). The figures are the full run's business.
func TestReceiptsBenchmarkRunsSmall(t *testing.T) {
	res, err := receipts.Run(context.Background(), receipts.Options{Receipts: 12000, Others: 2000, Requests: 10, Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 9 || res.BodyScan.Found != 1 {
		t.Fatalf("rows %d, body scan found %d", len(res.Rows), res.BodyScan.Found)
	}
}
