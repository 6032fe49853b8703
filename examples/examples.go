// Package examples ships the example data file that `commerce dev` seeds
// its demo organisation with and that `commerce seed` documents.
package examples

import _ "embed"

// Seed is examples/seed.json: a wholesale supplier's customers, catalogue,
// quotes, orders, suppliers, purchase orders, deliveries and stock.
//
//go:embed seed.json
var Seed []byte
