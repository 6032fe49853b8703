// Package domain holds the service's vocabulary: record types, status
// enumerations and their state machines, money arithmetic, and the error
// kinds every other layer speaks. It imports no storage, HTTP or workflow
// library, so its rules can be tested as plain functions and called from the
// REST API, inbound workflows and the admin CLI alike.
package domain
